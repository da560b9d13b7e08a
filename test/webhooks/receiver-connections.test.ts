import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeWithReceiver } from '../../webhooks/receiver-exchange';
import type { ResolvedAddress, ResolveHost } from '../../webhooks/targets';

/**
 * Attempts to one receiver share its connections, and the DNS pinning still holds with them: a name
 * that resolves to another address at a later attempt is sent there, never down a connection kept
 * open to the address it resolved to before. Two receivers listen on the same port of two loopback
 * addresses, each counting the connections made to it and the deliveries it received.
 */

interface CountingReceiver {
  server: Server;
  connections: number;
  received: string[];
}

async function countingReceiver(host: string, port: number): Promise<CountingReceiver> {
  const receiver: CountingReceiver = { server: createServer(), connections: 0, received: [] };
  receiver.server.on('connection', () => {
    receiver.connections += 1;
  });
  receiver.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.received.push(String(req.headers['x-service-delivery-id']));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.server.listen(port, host, resolve));
  return receiver;
}

let first: CountingReceiver;
let second: CountingReceiver;
let port: number;
beforeAll(async () => {
  first = await countingReceiver('127.0.0.1', 0);
  port = (first.server.address() as AddressInfo).port;
  second = await countingReceiver('127.0.0.2', port);
});
afterAll(async () => {
  for (const receiver of [first, second]) {
    receiver.server.closeAllConnections();
    await new Promise((resolve) => receiver.server.close(resolve));
  }
});

/** Answers `address` for every name, like a DNS server whose answer the test changes. */
function resolvingTo(address: string): ResolveHost {
  return async (): Promise<ResolvedAddress[]> => [{ address, family: 4 }];
}

function attempt(deliveryId: string, resolveHost: ResolveHost) {
  return exchangeWithReceiver(
    { url: `http://receiver.test:${port}/webhooks`, secret: 'sbx_whsec_test', source: 'organization' },
    deliveryId,
    '{}',
    null,
    {
      allowPrivateTargets: true,
      timeoutMs: 5_000,
      resolveHost,
    },
  );
}

describe('connections to a receiver', () => {
  it('are reused by the next attempts, and a name that now resolves elsewhere is sent to its new address', async () => {
    for (const id of ['dlv_a1', 'dlv_a2', 'dlv_a3']) {
      expect(await attempt(id, resolvingTo('127.0.0.1'))).toMatchObject({ outcome: 'succeeded', responseStatus: 200 });
      // The connection is back in its pool a turn of the event loop after the answer (attempts of deliveries are further apart).
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(first.received).toEqual(['dlv_a1', 'dlv_a2', 'dlv_a3']);
    expect(first.connections).toBe(1);

    expect(await attempt('dlv_b1', resolvingTo('127.0.0.2'))).toMatchObject({ outcome: 'succeeded', responseStatus: 200 });
    expect(second.received).toEqual(['dlv_b1']);
    expect(first.received).toHaveLength(3);
  });
});
