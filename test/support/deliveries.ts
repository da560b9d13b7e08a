import type { TestReceiver } from './receiver';
import type { TestService } from './service';
import { waitUntil } from './wait';

/** Polls a delivery until `done` holds for it, returning it; fails with the last state seen. */
export async function waitForDelivery(
  service: Pick<TestService, 'call'>,
  key: string,
  id: string,
  done: (delivery: any) => boolean,
  timeoutMs = 20_000,
): Promise<any> {
  let last: any;
  return waitUntil(
    async () => {
      last = (await service.call(`/v1/webhooks/deliveries/${id}`, { key })).body;
      return done(last) ? last : undefined;
    },
    { what: `delivery ${id} reaching the expected state`, timeoutMs, lastSeen: () => last },
  );
}

export const isFinished = (delivery: { status: string }) => ['succeeded', 'failed', 'cancelled'].includes(delivery.status);

/** A tenant whose organization default webhook URL is `url`, with its signing secret in full. */
export async function tenantReceivingAt(service: Pick<TestService, 'call' | 'newTenant'>, url: string) {
  const tenant = await service.newTenant();
  const settings = await service.call('/v1/settings/webhook', { key: tenant.key, method: 'PATCH', body: { webhook_url: url, rotate_secret: true } });
  return { ...tenant, secret: settings.body.webhook_secret as string };
}

export async function trigger(service: Pick<TestService, 'call'>, key: string, body: Record<string, unknown> = {}) {
  const response = await service.call('/v1/webhooks/trigger-mock-event', { key, method: 'POST', body });
  if (response.status !== 202) throw new Error(`trigger answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body as { id: string; envelope: unknown; url: string };
}

/**
 * What a receiver got for one delivery. A delivery that fails for good is also reported, as
 * webhook.delivery.exhausted, to the organization default, which in most tests is the same receiver.
 */
export const requestsFor = (receiver: TestReceiver, deliveryId: string) =>
  receiver.requests.filter((request) => request.headers['x-service-delivery-id'] === deliveryId);
