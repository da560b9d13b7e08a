import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeliveryActivities } from '../../activities/deliveries';
import { organizations } from '../../drizzle/schema';
import { newId } from '../../platform/ids';
import { attemptsOf, recordNewDelivery } from '../../webhooks/delivery-records';
import { checkWebhookTarget, normalizeHost, type ResolvedAddress, type ResolveHost, webhookUrlProblem } from '../../webhooks/targets';
import { tenantReceivingAt, trigger, waitForDelivery } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/** A public unicast address (documentation-adjacent, never connected to: no test sends off this machine). */
const PUBLIC = '93.184.215.14';
const v4 = (address: string): ResolvedAddress[] => [{ address, family: 4 }];

/**
 * A DNS server under the test's control: each name answers from its list of answers in turn (the
 * last one repeating), and every question is recorded. Any other name does not resolve, so a name
 * the checks should have refused by its spelling can never be sent anywhere.
 */
function testResolver(answers: Record<string, ResolvedAddress[][]>) {
  const asked: string[] = [];
  const resolveHost: ResolveHost = async (hostname) => {
    asked.push(hostname);
    const list = answers[hostname];
    if (!list) throw Object.assign(new Error(`${hostname} is not in the test resolver`), { code: 'ENOTFOUND' });
    const calls = asked.filter((name) => name === hostname).length;
    return list[Math.min(calls, list.length) - 1]!;
  };
  return { resolveHost, asked };
}

/** Every spelling of a blocked name the WHATWG URL parser leaves distinct: trailing dots, case, full-width IDN. */
function spellings(name: string): string[] {
  const mixed = [...name].map((char, index) => (index % 2 ? char.toUpperCase() : char)).join('');
  return [name, `${name}.`, `${name}..`, name.toUpperCase(), `${name.toUpperCase()}.`, `${mixed}.`];
}
const BLOCKED_NAMES = ['localhost', 'api.localhost', 'metadata.google.internal', 'metadata', 'instance-data'];
const BLOCKED_HOSTS = [...BLOCKED_NAMES.flatMap(spellings), 'ｌｏｃａｌｈｏｓｔ.', 'metadata。google。internal.'];

let service: TestService;
let receiver: TestReceiver;
let port: string;
const rebinding = testResolver({
  // First answer public (the configuration check), then loopback (every send): DNS rebinding.
  'rebind.test': [v4(PUBLIC), v4('127.0.0.1')],
  'public.test': [v4(PUBLIC)],
});

beforeAll(async () => {
  service = await startTestService({ ALLOW_PRIVATE_TARGETS: 'false', WEBHOOK_RETRY_SCHEDULE: '1h' }, { resolveHost: rebinding.resolveHost });
  receiver = await startReceiver();
  port = new URL(receiver.url).port;
});
afterAll(async () => {
  await receiver.close();
  await service.stop();
});

/** A delivery of this organization's, recorded as the trigger would, for an activity to attempt directly. */
async function deliveryTo(url: string): Promise<{ deliveryId: string }> {
  const tenant = await service.newTenant();
  await service.database.db.update(organizations).set({ webhookUrl: url }).where(eq(organizations.id, tenant.organizationId));
  const deliveryId = newId('dlv');
  await recordNewDelivery(service.database.db, {
    id: deliveryId,
    organizationId: tenant.organizationId,
    connectionId: null,
    scenarioId: null,
    event: 'adt.patient.admitted',
    environment: 'sandbox',
    envelopeBody: '{"synthetic":true}',
    createdAt: new Date().toISOString(),
  });
  return { deliveryId };
}

async function attemptOf(deliveryId: string, number: number) {
  return (await attemptsOf(service.database.db, [deliveryId])).get(deliveryId)![number - 1]!;
}

describe('host names are normalized before every check', () => {
  it('strips trailing dots, brackets and case, and maps IDN to ASCII', () => {
    expect(normalizeHost('LocalHost.')).toBe('localhost');
    expect(normalizeHost('metadata.google.internal..')).toBe('metadata.google.internal');
    expect(normalizeHost('[::1]')).toBe('::1');
    expect(normalizeHost('BÜCHER.example.')).toBe('xn--bcher-kva.example');
  });

  it('refuses every spelling of every blocked name, by its name, before asking DNS', async () => {
    const resolver = testResolver({});
    for (const host of BLOCKED_HOSTS) {
      const checked = await checkWebhookTarget(`http://${host}:${port}/webhooks`, { allowPrivate: false, resolveHost: resolver.resolveHost });
      expect(checked, host).toEqual({ refused: expect.stringMatching(/^points at [a-z.-]+, a private address/) });
    }
    expect(resolver.asked).toEqual([]);
  });
});

describe('at configuration', () => {
  it('refuses every spelling of every blocked name as an organization default and as a connection URL', async () => {
    const tenant = await service.newTenant();
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'Feed (synthetic)' } });
    expect(connection.status).toBe(201);
    for (const host of BLOCKED_HOSTS) {
      const webhook_url = `http://${host}:${port}/webhooks`;
      for (const [method, path, body] of [
        ['PATCH', '/v1/settings/webhook', { webhook_url }],
        ['POST', '/v1/connections', { name: 'Blocked (synthetic)', webhook_url }],
        ['PATCH', `/v1/connections/${connection.body.id}`, { webhook_url }],
      ] as const) {
        const response = await service.call(path, { key: tenant.key, method, body });
        expect(response.status, `${method} ${path} ${host}`).toBe(422);
        expect(response.body.code, `${method} ${path} ${host}`).toBe('webhook_url_not_allowed');
      }
    }
    // With private targets allowed, configuring asks DNS nothing: there is no address it would refuse.
    const permissive = testResolver({});
    expect(await webhookUrlProblem('http://localhost./hooks', true, permissive.resolveHost)).toBeNull();
    expect(await webhookUrlProblem('https://partner.test/hooks', true, permissive.resolveHost)).toBeNull();
    expect(permissive.asked).toEqual([]);
    // A public name is still accepted.
    const accepted = await service.call('/v1/settings/webhook', {
      key: tenant.key,
      method: 'PATCH',
      body: { webhook_url: 'https://public.test/hooks' },
    });
    expect(accepted.status).toBe(200);
  });
});

describe('at send', () => {
  const activities = (allowPrivateTargets: boolean, resolveHost: ResolveHost) =>
    createDeliveryActivities({ db: service.database.db, allowPrivateTargets, timeoutMs: 5_000, resolveHost });

  it('refuses every spelling of every blocked name stored before the check, and records why on the attempt', async () => {
    const resolver = testResolver({});
    const strict = activities(false, resolver.resolveHost);
    for (const host of BLOCKED_HOSTS) {
      const { deliveryId } = await deliveryTo(`http://${host}:${port}/webhooks`);
      const result = await strict.attemptDelivery({ deliveryId, attemptNumber: 1, trigger: 'initial' });
      expect(result.outcome, host).toBe('failed');
      const attempt = await attemptOf(deliveryId, 1);
      expect(attempt.error, host).toMatch(/^Refused before sending: the webhook URL points at [a-z.-]+, a private address/);
      expect(attempt.responseStatus, host).toBeNull();
    }
    expect(resolver.asked).toEqual([]);
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses a name that resolved to a public address when configured and to loopback when sent (DNS rebinding)', async () => {
    const tenant = await tenantReceivingAt(service, `http://rebind.test:${port}/webhooks`);
    const accepted = await trigger(service, tenant.key);
    const delivery = await waitForDelivery(service, tenant.key, accepted.id, (d) => d.status === 'retrying');
    expect(delivery.attempts[0]).toMatchObject({
      target_url: `http://rebind.test:${port}/webhooks`,
      response_status: null,
      error: expect.stringContaining('Refused before sending: the webhook URL resolves to 127.0.0.1, a private address'),
    });
    expect(rebinding.asked.filter((name) => name === 'rebind.test').length).toBeGreaterThanOrEqual(2);
    expect(receiver.requests).toHaveLength(0);
    await service.call(`/v1/webhooks/deliveries/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
  });

  it('sends to the address it checked, with the Host header of the URL, and checks again at the next attempt', async () => {
    const own = await startReceiver();
    try {
      const ownPort = new URL(own.url).port;
      // The name never resolves through the system resolver, so a request that arrives went to the pinned address.
      const resolver = testResolver({ 'pinned.test': [v4('127.0.0.1'), v4('127.0.0.2')] });
      const permissive = activities(true, resolver.resolveHost);
      const { deliveryId } = await deliveryTo(`http://pinned.test:${ownPort}/webhooks`);
      const first = await permissive.attemptDelivery({ deliveryId, attemptNumber: 1, trigger: 'initial' });
      expect(first.outcome).toBe('succeeded');
      expect(own.requests).toHaveLength(1);
      expect(own.requests[0]!.headers.host).toBe(`pinned.test:${ownPort}`);
      expect(resolver.asked).toEqual(['pinned.test']);
      // The next attempt resolves again and goes where that answer says: 127.0.0.2, where nothing listens.
      const second = await permissive.attemptDelivery({ deliveryId, attemptNumber: 2, trigger: 'retry' });
      expect(second.outcome).toBe('failed');
      expect((await attemptOf(deliveryId, 2)).error).toContain('ECONNREFUSED');
      expect(resolver.asked).toEqual(['pinned.test', 'pinned.test']);
      expect(own.requests).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it('names the URL host in TLS (SNI) while connecting to the checked address', async () => {
    // A TLS server that records the server name each client asks for, then ends the handshake.
    const serverNames: string[] = [];
    const tls = createTlsServer({
      SNICallback: (name, answer) => {
        serverNames.push(name);
        answer(new Error('test server: no certificate'), undefined);
      },
    });
    tls.on('tlsClientError', () => {});
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    try {
      const { port: tlsPort } = tls.address() as AddressInfo;
      const resolver = testResolver({ 'pinned.test': [v4('127.0.0.1')] });
      const { deliveryId } = await deliveryTo(`https://pinned.test:${tlsPort}/webhooks`);
      const result = await activities(true, resolver.resolveHost).attemptDelivery({ deliveryId, attemptNumber: 1, trigger: 'initial' });
      expect(result.outcome).toBe('failed');
      expect(serverNames).toEqual(['pinned.test']);
    } finally {
      await new Promise((resolve) => tls.close(resolve));
    }
  });

  it('records a redirect as the answer and never follows it', async () => {
    const elsewhere = await startReceiver();
    const redirecting = await startReceiver(() => ({ status: 302, headers: { location: elsewhere.url } }));
    try {
      const { deliveryId } = await deliveryTo(redirecting.url);
      const result = await activities(true, testResolver({}).resolveHost).attemptDelivery({ deliveryId, attemptNumber: 1, trigger: 'initial' });
      expect(result).toMatchObject({ outcome: 'failed', responseStatus: 302 });
      expect((await attemptOf(deliveryId, 1)).error).toContain(`a redirect to ${elsewhere.url}; redirects are not followed`);
      expect(redirecting.requests).toHaveLength(1);
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await redirecting.close();
      await elsewhere.close();
    }
  });

  it('counts resolving the name within the attempt time limit', async () => {
    const { deliveryId } = await deliveryTo(`http://silent.test:${port}/webhooks`);
    const neverAnswers: ResolveHost = () => new Promise(() => {});
    const quick = createDeliveryActivities({ db: service.database.db, allowPrivateTargets: false, timeoutMs: 300, resolveHost: neverAnswers });
    const result = await quick.attemptDelivery({ deliveryId, attemptNumber: 1, trigger: 'initial' });
    expect(result.outcome).toBe('failed');
    expect((await attemptOf(deliveryId, 1)).error).toBe("Timed out: the receiver's name did not resolve within 300 ms.");
  });

  it('records a name that does not resolve as an unreachable receiver', async () => {
    const { deliveryId } = await deliveryTo(`http://nowhere.test:${port}/webhooks`);
    await activities(false, testResolver({}).resolveHost).attemptDelivery({ deliveryId, attemptNumber: 1, trigger: 'initial' });
    expect((await attemptOf(deliveryId, 1)).error).toBe('Could not reach the receiver: nowhere.test did not resolve (ENOTFOUND).');
  });
});
