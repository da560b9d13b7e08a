import type { ErrorRequestHandler } from 'express';
import { WorkflowEngineUnavailableError, WorkflowRefusedError } from '../../platform/workflow-client';
import { ApiProblem } from './problem';

export const JSON_BODY_LIMIT = '1mb';

/** Every error leaves as application/problem+json; unexpected ones are logged and never leak a stack. */
export const problemHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const problem = toProblem(error);
  if (problem.status >= 500 && problem.code === 'internal_error') req.log.error({ err: error }, 'Unhandled error');
  for (const [name, value] of Object.entries(problem.extra.headers ?? {})) res.setHeader(name, value);
  res
    .status(problem.status)
    .type('application/problem+json')
    .send(JSON.stringify(problem.body(String(req.id), req.originalUrl)));
};

function toProblem(error: unknown): ApiProblem {
  if (error instanceof ApiProblem) return error;
  // A workflow said no: the request conflicts with the run's state, and the workflow says why.
  if (error instanceof WorkflowRefusedError) return new ApiProblem(409, error.code, error.message);
  if (error instanceof WorkflowEngineUnavailableError) {
    return new ApiProblem(503, 'workflow_engine_unavailable', `The workflow engine did not take the request (${error.message}). Retry shortly.`);
  }
  const bodyError = error as { type?: string; status?: number };
  if (bodyError.type === 'entity.parse.failed') return new ApiProblem(400, 'malformed_json', 'The request body is not valid JSON.');
  if (bodyError.type === 'entity.too.large')
    return new ApiProblem(413, 'body_too_large', `The request body is larger than the ${JSON_BODY_LIMIT} limit.`);
  if (bodyError.type === 'encoding.unsupported' || bodyError.type === 'charset.unsupported') {
    return new ApiProblem(415, 'unsupported_encoding', 'Send the body as UTF-8 JSON.');
  }
  return new ApiProblem(500, 'internal_error', 'Something went wrong on our side. Quote the request_id when you report it.');
}
