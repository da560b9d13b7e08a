import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { type Database, pingDatabase } from '../../platform/database';
import { ApiProblem, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../http/problem';
import { defineRoute } from '../http/route';

const CHECK_TIMEOUT_MS = 2_000;

const readinessSchema = z
  .object({ status: z.literal('ready'), checks: z.object({ database: z.literal('ok'), temporal: z.literal('ok') }) })
  .meta({ id: 'Readiness' });

/** Liveness (the process answers) and readiness (its database and Temporal answer too). */
export function healthRoutes({ db, temporal }: { db: Database; temporal: Client }) {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'getLiveness',
      summary: 'Liveness: the API process is running',
      tag: 'Health',
      auth: 'none',
      success: { status: 200, description: 'Alive', schema: z.object({ status: z.literal('ok') }) },
      handler: async () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Readiness: the database and Temporal both answer',
      tag: 'Health',
      auth: 'none',
      success: { status: 200, description: 'Ready to serve', schema: readinessSchema },
      errors: [503],
      handler: async () => {
        const [database, workflowEngine] = await Promise.all([
          check(() => pingDatabase(db)),
          check(() => temporal.connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () => temporal.workflowService.getSystemInfo({}))),
        ]);
        const failures = [database && `database: ${database}`, workflowEngine && `temporal: ${workflowEngine}`].filter(Boolean);
        if (failures.length > 0) {
          // `checks` names each dependency's state, so a probe or an operator sees which one is down.
          const checks = { database: database ? `down: ${database}` : 'ok', temporal: workflowEngine ? `down: ${workflowEngine}` : 'ok' };
          throw new ApiProblem(503, 'not_ready', `Not ready. ${failures.join('; ')}`, {
            headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
            members: { checks },
          });
        }
        return { status: 'ready' as const, checks: { database: 'ok' as const, temporal: 'ok' as const } };
      },
    }),
  ];
}

/** Runs a probe with a time limit; returns why it failed, or null. */
async function check(probe: () => Promise<unknown>): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([probe(), timeout]);
    return null;
  } catch (error) {
    return (error as Error).message;
  } finally {
    clearTimeout(timer);
  }
}
