import { createServer } from 'node:net';

/** A port nothing listens on right now: `port` when free, otherwise one the kernel picks. */
export function freePort(port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A free port in [from, to], tried at random: for ports that must stay below the kernel's ephemeral
 * range (Temporal stores membership ports as a Postgres smallint, at most 32767).
 */
export async function freePortBetween(from: number, to: number): Promise<number> {
  for (let tries = 0; tries < 100; tries += 1) {
    const candidate = from + Math.floor(Math.random() * (to - from + 1));
    const bound = await freePort(candidate).catch(() => null);
    if (bound !== null) return bound;
  }
  throw new Error(`No free port between ${from} and ${to}`);
}
