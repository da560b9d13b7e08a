import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listTemplates } from '../../hl7/templates';
import { MAX_RETRY_AFTER_MS } from '../../webhooks/delivery-records';
import { isFinished, requestsFor, tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

// Two quick retries: three attempts in all, so "bounded" is a number a test can count.
const SCHEDULE_MS = [200, 200];

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE_MS.map((ms) => `${ms}ms`).join(',') });
});
afterAll(() => service.stop());

describe('answers that Postgres cannot store as they came', () => {
  it('a receiver answering a NUL byte: every attempt is recorded (NUL replaced), and the delivery ends after the schedule', async () => {
    const receiver = await startReceiver(() => ({ status: 500, body: 'broken\u0000answer' }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('failed');
      expect(delivery.attempts).toHaveLength(SCHEDULE_MS.length + 1);
      for (const attempt of delivery.attempts) {
        expect(attempt).toMatchObject({ outcome: 'failed', response_status: 500, response_body: 'broken\uFFFDanswer' });
      }
      // One send per recorded attempt: nothing was sent again because a record failed.
      expect(requestsFor(receiver, accepted.id)).toHaveLength(SCHEDULE_MS.length + 1);
    } finally {
      await receiver.close();
    }
  });

  it('a 2xx with a NUL byte succeeds after one send', async () => {
    const receiver = await startReceiver(() => ({ status: 200, body: '\u0000' }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery).toMatchObject({ status: 'succeeded', attempts: [{ outcome: 'succeeded', response_body: '\uFFFD' }] });
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('a 429 asking to wait 3,000 years waits a day, is recorded, and can be cancelled', async () => {
    const receiver = await startReceiver(() => ({ status: 429, headers: { 'Retry-After': '99999999999' } }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const retrying = await waitForDelivery(service, tenant.key, accepted.id, (delivery) => delivery.status === 'retrying');
      expect(retrying.attempts).toMatchObject([{ outcome: 'failed', response_status: 429 }]);
      const waitMs = Date.parse(retrying.next_attempt_at) - Date.parse(retrying.attempts[0].attempted_at);
      expect(waitMs).toBeGreaterThanOrEqual(MAX_RETRY_AFTER_MS);
      expect(waitMs).toBeLessThan(MAX_RETRY_AFTER_MS + 60_000);

      const cancelled = await service.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', next_attempt_at: null });
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('an answer the database refuses for good: recorded without it, saying why, and the delivery ends failed after one send', async () => {
    const marker = 'refused-by-a-synthetic-trigger';
    // A stand-in for any value Postgres refuses outright (not an outage): a trigger that refuses this one answer.
    await service.database.db.execute(
      sql.raw(`create or replace function pipeline_test_refuse_answer() returns trigger language plpgsql as $$
        begin
          if new.response_body like '%${marker}%' then raise exception 'synthetic refusal: this answer cannot be stored'; end if;
          return new;
        end $$`),
    );
    await service.database.db.execute(
      sql.raw(
        'create or replace trigger pipeline_test_refuse_answer before update on delivery_attempts for each row execute function pipeline_test_refuse_answer()',
      ),
    );
    const receiver = await startReceiver(() => ({ status: 500, body: marker }));
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const accepted = await trigger(service, tenant.key);
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, isFinished);
      expect(delivery.status).toBe('failed');
      expect(delivery.attempts).toEqual([
        expect.objectContaining({
          outcome: 'failed',
          response_status: 500,
          response_body: null,
          error: expect.stringMatching(/could not be recorded \(.*synthetic refusal.*\), so the delivery is stopped/),
        }),
      ]);
      expect(requestsFor(receiver, accepted.id)).toHaveLength(1);
    } finally {
      await receiver.close();
      await service.database.db.execute(sql.raw('drop trigger if exists pipeline_test_refuse_answer on delivery_attempts'));
    }
  });

  it('an HL7 message whose MSH-10 decodes to NUL is delivered, its control id made storable', async () => {
    const receiver = await startReceiver();
    try {
      const tenant = await tenantReceivingAt(service, receiver.url);
      const template = listTemplates()[0]!;
      const fields = template.er7.split('\r')[0]!.split('|');
      fields[9] = 'SYNTH\\X00\\1';
      const message = [fields.join('|'), ...template.er7.split('\r').slice(1)].join('\r');
      const injected = await service.call('/v1/sandbox/hl7/inject', { key: tenant.key, method: 'POST', body: { message } });
      expect(injected.status).toBe(202);
      const delivery = await waitForDelivery(service, tenant.key, injected.body.delivery.id, isFinished);
      expect(delivery).toMatchObject({ status: 'succeeded', hl7_control_id: 'SYNTH\uFFFD1' });
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});

describe('cancel while an attempt is in flight', () => {
  it('answers at once; the attempt still lands in the log, and the delivery stays cancelled', async () => {
    // A receiver that holds its answer until the test lets it go.
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => held.push(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const tenant = await tenantReceivingAt(service, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
      const accepted = await trigger(service, tenant.key);
      await waitForDelivery(service, tenant.key, accepted.id, () => held.length === 1);

      const cancelled = await service.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      // Answered while the receiver still holds the attempt's request.
      expect(held[0]!.writableEnded).toBe(false);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', attempts: [{ number: 1, outcome: 'sending', duration_ms: null }] });

      held[0]!.writeHead(200).end('ok');
      const delivery = await waitForDelivery(service, tenant.key, accepted.id, (seen) => seen.attempts[0]?.outcome !== 'sending');
      expect(delivery).toMatchObject({ status: 'cancelled', attempts: [{ number: 1, outcome: 'succeeded', response_status: 200 }] });
      expect(held).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
