import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTEMPT_HEARTBEAT_TIMEOUT_MS } from '../../workflows/delivery/policy';
import { tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { runEntryPoint } from '../support/processes';
import { startTestService, type TestService } from '../support/service';

// One quick retry after the lost attempt.
const SCHEDULE = '500ms';
/**
 * A lost attempt is retried once its heartbeat timeout has passed, not at the attempt's 10-minute
 * limit: the timeout, then the activity's first retry (1 s) and room for a loaded machine.
 */
const RETRIED_WITHIN_MS = ATTEMPT_HEARTBEAT_TIMEOUT_MS + 10_000;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE });
});
afterAll(() => service.stop());

describe('a worker killed mid-attempt, after the POST and before its record', () => {
  it(`leaves the send in the attempt log, resolved as unknown, and the next attempt starts within ${RETRIED_WITHIN_MS / 1000} s`, {
    timeout: 150_000,
  }, async () => {
    // The first request is held (the worker dies while waiting for the answer); later ones answer 200.
    const held: ServerResponse[] = [];
    const arrivals: number[] = [];
    const waiters = new Set<() => void>();
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        arrivals.push(Date.now());
        if (arrivals.length === 1) held.push(res);
        else res.writeHead(200).end('ok');
        for (const wake of waiters) wake();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const arrived = (count: number, timeoutMs: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (arrivals.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => reject(new Error(`${count} requests expected within ${timeoutMs} ms, got ${arrivals.length}`)), timeoutMs);
        waiters.add(check);
        check();
      });

    // The attempt's worker is a process of its own, so it can be killed outright (SIGKILL: no draining).
    await service.stopWorker();
    const doomed = runEntryPoint('bin/start-worker.ts', [], {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: service.config.DATABASE_URL,
      TEMPORAL_ADDRESS: service.config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: service.taskQueue,
      ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
    });
    try {
      await doomed.waitFor(/Worker polling/, 90_000);
      const tenant = await tenantReceivingAt(service, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
      const accepted = await trigger(service, tenant.key);
      await arrived(1, 30_000);
      // Sent and not yet answered: the log already shows it.
      const sending = await waitForDelivery(service, tenant.key, accepted.id, (delivery) => delivery.attempts.length === 1);
      expect(sending.attempts[0]).toMatchObject({ number: 1, outcome: 'sending', duration_ms: null });

      // A replacement polls first, so only the lost attempt's own timeout stands between the kill and the retry.
      await service.startWorker();
      expect(await doomed.stop('SIGKILL')).toBeNull();
      const killedAt = Date.now();
      await arrived(2, RETRIED_WITHIN_MS);
      expect(arrivals[1]! - killedAt).toBeLessThan(RETRIED_WITHIN_MS);

      const delivery = await waitForDelivery(service, tenant.key, accepted.id, (seen) => seen.status === 'succeeded');
      expect(delivery.attempts).toMatchObject([
        { number: 1, outcome: 'unknown', duration_ms: null, error: expect.stringContaining('may or may not have received it') },
        { number: 2, outcome: 'succeeded', response_status: 200 },
      ]);
      // Two sends, two attempts in the log: none missing, none twice.
      expect(arrivals).toHaveLength(2);
    } finally {
      await doomed.stop('SIGKILL');
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
