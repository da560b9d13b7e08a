import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantReceivingAt } from '../support/deliveries';
import type { CallResult } from '../support/service';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';
import { hasEnded, startRun, waitForRun } from './support';

// A short call deadline, so an advance that waits for the run outlives it (503) as it would under load.
const CALL_TIMEOUT_MS = 1500;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ TEMPORAL_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS) });
});
afterAll(() => service.stop());

describe('an advance retried after a 503', () => {
  it('moves the run one step, not one per try', { timeout: 90_000 }, async () => {
    // The receiver holds the first event's answer, so the run waits for it to settle before its next step waits.
    const held: ServerResponse[] = [];
    const events: string[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        events.push(JSON.parse(Buffer.concat(chunks).toString('utf8')).event);
        if (events.length === 1) held.push(res);
        else res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const tenant = await tenantReceivingAt(service, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
      // Three steps: the first emits at once, the other two each wait for an advance.
      const accepted = await startRun(service, tenant.key, 'appointment_rescheduled', { pace: { mode: 'manual' } });
      await waitUntil(() => (held.length === 1 ? true : undefined), { what: 'the first event reaching the receiver' });
      const advance = (idempotencyKey: string) =>
        service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/advance`, {
          key: tenant.key,
          method: 'POST',
          headers: { 'idempotency-key': idempotencyKey },
        });
      const idempotencyKey = randomUUID();

      // No step waits yet: the advance waits for one past the call deadline, and the client retries, as told.
      const tries: CallResult[] = [await advance(idempotencyKey), await advance(idempotencyKey)];
      for (const answer of tries) {
        expect(answer.status).toBe(503);
        expect(answer.headers.get('retry-after')).toEqual(expect.any(String));
        expect(answer.body.code).not.toBe('internal_error');
      }
      held[0]!.writeHead(200).end('ok');
      // The advance goes through meanwhile: the step it released emits. Only then does the client's retry come.
      await waitUntil(() => (events.length === 2 ? true : undefined), { what: 'the released step emitting' });
      await waitForRun(service, tenant.key, accepted.id, (seen) => seen.steps[1].status === 'done');
      const advanced = await waitUntil(
        async () => {
          const answer = await advance(idempotencyKey);
          tries.push(answer);
          return answer.status === 200 ? answer : undefined;
        },
        { what: 'the advance being answered 200', intervalMs: 200, lastSeen: () => tries.at(-1)?.body },
      );
      expect(tries.filter((answer) => answer.status !== 200 && answer.status !== 503)).toEqual([]);
      expect(advanced.body.steps[1].status).not.toBe('pending');

      // One step released: the third step waits for an advance of its own.
      const run = await waitForRun(service, tenant.key, accepted.id, (seen) => seen.steps[2].status === 'waiting' || hasEnded(seen));
      expect(run.status).toBe('running');
      expect(run.steps.map((step: any) => step.status)).toEqual(['done', 'done', 'waiting']);
      expect(events).toEqual(['scheduling.appointment.booked', 'scheduling.appointment.cancelled']);

      const last = await advance(randomUUID());
      expect(last.status).toBe(200);
      const done = await waitForRun(service, tenant.key, accepted.id, hasEnded);
      expect(done.status).toBe('completed');
      await waitUntil(() => (events.length === 3 ? true : undefined), { what: 'the last event arriving' });
      expect(events).toEqual(['scheduling.appointment.booked', 'scheduling.appointment.cancelled', 'scheduling.appointment.booked']);
    } finally {
      held[0]?.end();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers many advances in flight at once 503 with Retry-After, never 500', { timeout: 90_000 }, async () => {
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => held.push(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const tenant = await tenantReceivingAt(service, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
      const accepted = await startRun(service, tenant.key, 'appointment_rescheduled', { pace: { mode: 'manual' } });
      await waitUntil(() => (held.length === 1 ? true : undefined), { what: 'the first event reaching the receiver' });
      // Fifteen distinct advances at once, each waiting for a step that does not wait yet: more than the 10 Temporal holds per run.
      const answers = await Promise.all(
        Array.from({ length: 15 }, () =>
          service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/advance`, {
            key: tenant.key,
            method: 'POST',
            headers: { 'idempotency-key': randomUUID() },
          }),
        ),
      );
      expect(answers.map((answer) => answer.status).filter((status) => status !== 503)).toEqual([]);
      for (const answer of answers) expect(answer.headers.get('retry-after')).toEqual(expect.any(String));
    } finally {
      for (const response of held) response.end();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
