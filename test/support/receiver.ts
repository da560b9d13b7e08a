import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface TestReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** Changes how later requests are answered. */
  answerWith(answer: (request: ReceivedRequest, index: number) => Answer): void;
  /** Resolves once `count` requests have arrived (fails after `timeoutMs`). */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A partner's receiver: a real local HTTP server that records every request it gets. */
export async function startReceiver(
  answer: (request: ReceivedRequest, index: number) => Answer = () => ({ status: 200, body: 'ok' }),
): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  let answerRequest = answer;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      requests.push(request);
      const reply = answerRequest(request, requests.length - 1);
      res.writeHead(reply.status, reply.headers ?? {});
      res.end(reply.body ?? '');
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    requests,
    answerWith(next) {
      answerRequest = next;
    },
    waitForRequests(count, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length >= count) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(requests.slice(0, count));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${count} requests, got ${requests.length} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
