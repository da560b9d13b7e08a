import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface TcpProxy {
  host: string;
  port: number;
  /** `host:port`, for TEMPORAL_ADDRESS. */
  address: string;
  /** Drops every connection and stops listening, as a restarting server does (ECONNREFUSED). */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  /** Holds every chunk this long in each direction (0: none), to widen the window between two steps. */
  setLatency(ms: number): void;
  /** Connections dropped so far because the client sent what `cutOnClientChunk` matched. */
  cutConnections(): number;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Drops the connection, both ends, when the client sends a chunk this matches, instead of forwarding it: an outage landing at that exact step. */
  cutOnClientChunk?: (chunk: Buffer) => boolean;
}

/** A TCP proxy a test controls, between a process under test and a dependency (Postgres, Temporal). */
export async function startTcpProxy(target: { host: string; port: number }, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let latencyMs = 0;
  let cutConnections = 0;
  let server: Server | null = null;
  let port = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  // Each chunk is written after the latency, in order, so a delayed stream stays a stream.
  const forward = (from: Socket, to: Socket, cutOn?: (chunk: Buffer) => boolean) => {
    let queue = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      if (cutOn?.(chunk)) {
        cutConnections += 1;
        from.destroy();
        to.destroy();
        return;
      }
      const delay = latencyMs;
      queue = queue.then(async () => {
        if (delay > 0) await sleep(delay);
        if (!to.destroyed) to.write(chunk);
      });
    });
    from.on('end', () => {
      queue = queue.then(() => {
        to.end();
      });
    });
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const created = createServer((client) => {
        const upstream = tcpConnect(target.port, target.host);
        track(client);
        track(upstream);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        forward(client, upstream, options.cutOnClientChunk);
        forward(upstream, client);
      });
      created.once('error', reject);
      created.listen(port, '127.0.0.1', () => {
        server = created;
        port = (created.address() as AddressInfo).port;
        resolve();
      });
    });

  const stopListening = async () => {
    const current = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    if (current) await new Promise<void>((resolve) => current.close(() => resolve()));
  };

  await listen();
  return {
    host: '127.0.0.1',
    port,
    address: `127.0.0.1:${port}`,
    cut: stopListening,
    restore: listen,
    setLatency(ms) {
      latencyMs = ms;
    },
    cutConnections: () => cutConnections,
    close: stopListening,
  };
}
