import { z } from 'zod';
import { findAuthorizationById, readPriorAuthSettings, writePriorAuthSettings } from '../../claims/pas/authorization-records';
import { DEFAULT_PRIOR_AUTH_PACE } from '../../claims/pas/decision';
import { claimResponseId } from '../../claims/pas/response';
import { AUTHORIZATION_DECISIONS, PRIOR_AUTH_OUTCOMES } from '../../claims/pas/vocabulary';
import type { Database } from '../../platform/database';
import { idSchema } from '../../platform/ids';
import { WorkflowClosedError, type WorkflowGateway, WorkflowRefusedError } from '../../platform/workflow-gateway';
import { PACE_MODES } from '../../scenarios/vocabulary';
import { advancePriorAuthUpdate, type PriorAuthStatus } from '../../workflows/prior-auth/contract';
import { ApiProblem, notFound } from '../http/problem';
import { defineRoute } from '../http/route';

const MAX_TIME_SCALE = 10_000_000;

const paceSchema = z
  .object({
    mode: z.enum(PACE_MODES),
    time_scale: z
      .number()
      .min(1)
      .max(MAX_TIME_SCALE)
      .nullable()
      .optional()
      .meta({ description: 'Simulated seconds per real second, accelerated only' }),
  })
  .strict()
  .refine((pace) => pace.mode === 'accelerated' || pace.time_scale === undefined || pace.time_scale === null, {
    message: 'time_scale applies only to the accelerated pace',
    path: ['time_scale'],
  });

const settingsSchema = z
  .object({
    pace: paceSchema.meta({
      description: `How pended decisions move: realtime (the payer's review time as it is), accelerated (divided by time_scale) or manual (decided when advanced). Default accelerated ×${DEFAULT_PRIOR_AUTH_PACE.time_scale}.`,
    }),
    outcome: z
      .enum(PRIOR_AUTH_OUTCOMES)
      .nullable()
      .meta({ description: 'The outcome of every submission without a test member id or header; null: the payer rules decide' }),
  })
  .meta({ id: 'PriorAuthSettings' });

const statusSchema = z
  .object({
    id: z.string().meta({ example: 'pa_01jd4z6v9xf3q8c2h7w0r5t1ka' }),
    claim_response: z
      .string()
      .meta({ description: 'The ClaimResponse the PAS answers carry', example: 'ClaimResponse/pa-01jd4z6v9xf3q8c2h7w0r5t1ka' }),
    decision: z.enum(AUTHORIZATION_DECISIONS).nullable(),
    due_at: z.iso.datetime().nullable().meta({ description: 'When a pended decision is due (null at manual pace)' }),
  })
  .meta({ id: 'PriorAuthorizationStatus' });

const authorizationParams = z.object({ authorization_id: idSchema('pa') });

/** The sandbox side of the PAS operations (API key): the pace and default outcome of an organization's submissions, and advancing a pend. */
export function priorAuthSandboxRoutes({ db, workflows }: { db: Database; workflows: WorkflowGateway }) {
  const present = (id: string, status: Pick<PriorAuthStatus, 'decision' | 'due_at'>) => ({
    id,
    claim_response: `ClaimResponse/${claimResponseId(id)}`,
    decision: status.decision,
    due_at: status.due_at,
  });
  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/prior-auth/settings',
      operationId: 'getPriorAuthSettings',
      summary: 'Read the pace and default outcome of this organization’s PAS submissions',
      tag: 'Prior authorization',
      auth: 'api_key',
      success: { status: 200, description: 'The settings', schema: settingsSchema },
      handler: async ({ auth }) => readPriorAuthSettings(db, auth.organizationId),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/sandbox/prior-auth/settings',
      operationId: 'setPriorAuthSettings',
      summary: 'Set the pace and default outcome of this organization’s PAS submissions',
      description: 'Applies to submissions from now on; each authorization keeps the pace it was submitted at.',
      tag: 'Prior authorization',
      auth: 'api_key',
      body: settingsSchema,
      success: { status: 200, description: 'The settings', schema: settingsSchema },
      errors: [415, 422],
      handler: async ({ auth, body }) =>
        writePriorAuthSettings(db, auth.organizationId, {
          pace: {
            mode: body.pace.mode,
            time_scale: body.pace.mode === 'accelerated' ? (body.pace.time_scale ?? DEFAULT_PRIOR_AUTH_PACE.time_scale) : null,
          },
          outcome: body.outcome,
        }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/prior-auth/authorizations/{authorization_id}',
      operationId: 'getPriorAuthorization',
      summary: 'Read an authorization’s decision and when a pend is due',
      tag: 'Prior authorization',
      auth: 'api_key',
      params: authorizationParams,
      success: { status: 200, description: 'The authorization', schema: statusSchema },
      errors: [404],
      handler: async ({ auth, params }) => {
        const row = await findAuthorizationById(db, auth.organizationId, params.authorization_id);
        if (!row) throw notFound('prior authorization', params.authorization_id, 'path.authorization_id');
        return present(row.id, { decision: row.decision, due_at: row.decision === 'pended' ? (row.dueAt?.toISOString() ?? null) : null });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/prior-auth/authorizations/{authorization_id}/advance',
      operationId: 'advancePriorAuthorization',
      summary: 'Decide a pended authorization now (manual pace, or to cut the review time short)',
      description: 'Answers once the payer has decided; 409 when the authorization is not pended.',
      tag: 'Prior authorization',
      auth: 'api_key',
      params: authorizationParams,
      success: { status: 200, description: 'The decided authorization', schema: statusSchema },
      errors: [404, 409],
      handler: async ({ auth, params }) => {
        const row = await findAuthorizationById(db, auth.organizationId, params.authorization_id);
        if (!row) throw notFound('prior authorization', params.authorization_id, 'path.authorization_id');
        try {
          return present(row.id, await workflows.update(row.workflowId, advancePriorAuthUpdate));
        } catch (error) {
          if (error instanceof WorkflowRefusedError) throw new ApiProblem(409, error.code, error.message);
          if (error instanceof WorkflowClosedError) throw new ApiProblem(409, 'authorization_closed', 'This authorization is closed.');
          throw error;
        }
      },
    }),
  ];
}
