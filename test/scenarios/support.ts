import { createHmac } from 'node:crypto';
import { expect } from 'vitest';
import type { ReceivedRequest } from '../support/receiver';
import type { TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/** A pace fast enough for the longest scenario (about 15 simulated days) to run in about a second. */
export const FAST = { mode: 'accelerated', time_scale: 1_000_000 } as const;

export async function runScenario(
  service: Pick<TestService, 'call'>,
  key: string,
  scenarioId: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return service.call(`/v1/sandbox/scenarios/${scenarioId}/run`, { key, method: 'POST', body, headers });
}

export async function startRun(service: Pick<TestService, 'call'>, key: string, scenarioId: string, body: Record<string, unknown> = {}) {
  const response = await runScenario(service, key, scenarioId, body);
  if (response.status !== 202) throw new Error(`run answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Polls a run until `done` holds for it, returning it; fails with the last state seen. */
export async function waitForRun(
  service: Pick<TestService, 'call'>,
  key: string,
  id: string,
  done: (run: any) => boolean,
  timeoutMs = 20_000,
): Promise<any> {
  let last: any;
  return waitUntil(
    async () => {
      last = (await service.call(`/v1/sandbox/scenarios/runs/${id}`, { key })).body;
      return done(last) ? last : undefined;
    },
    { what: `run ${id} reaching the expected state`, timeoutMs, lastSeen: () => last },
  );
}

/** The events the prior-authorization scenario emits, in step order, when it pends then approves. */
export const PENDED_THEN_APPROVED_EVENTS = [
  'orders.service_request.placed',
  'eligibility.check.completed',
  'prior_auth.request.submitted',
  'prior_auth.request.pended',
  'prior_auth.request.approved',
  'scheduling.appointment.booked',
];

export const hasEnded = (run: { status: string }) => run.status !== 'running';

/** The envelopes a receiver got, after checking each one's signature with the tenant's secret. */
export function verifiedEnvelopes(requests: ReceivedRequest[], secret: string): any[] {
  return requests.map((request) => {
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(request.body).digest('hex');
    expect(request.headers['x-service-signature']).toBe(`sha256=${expected}`);
    return { ...JSON.parse(request.body), delivery_id: request.headers['x-service-delivery-id'] };
  });
}

/** The (event, delivery id) pairs a run emitted, in step order. */
export function emittedOf(run: any): { step: string; event: string; delivery_id: string }[] {
  return run.steps.flatMap((step: any) => step.emitted.map((emitted: any) => ({ step: step.id, ...emitted })));
}
