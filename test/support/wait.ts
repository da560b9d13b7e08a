import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` until it returns a value other than undefined, and returns that value; fails after
 * `timeoutMs` saying what was awaited and, when given, what was last seen.
 */
export async function waitUntil<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  options: { what: string; timeoutMs?: number; intervalMs?: number; lastSeen?: () => unknown },
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const seen = options.lastSeen ? `; last seen: ${JSON.stringify(options.lastSeen())}` : '';
      throw new Error(`${options.what} did not happen within ${options.timeoutMs ?? 20_000} ms${seen}`);
    }
    await sleep(options.intervalMs ?? 50);
  }
}
