import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The time-skipping Temporal server the test run shares (source in ./time-skipping-server/): it
 * fast-forwards a workflow's timers whenever the workflow has no work in flight.
 */

const SOURCE = fileURLToPath(new URL('./time-skipping-server/', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const TIME_SKIPPING_SERVER_BINARY = process.env.TEMPORAL_TIME_SKIPPING_SERVER ?? join(PROJECT_ROOT, '.tools', 'time-skipping-server');

/** Builds the server from the Go module proxy on first use (minutes, then cached by Go). */
export function ensureTimeSkippingServer(log: (message: string) => void): string {
  if (existsSync(TIME_SKIPPING_SERVER_BINARY)) return TIME_SKIPPING_SERVER_BINARY;
  const go = ['go', '/usr/local/go/bin/go'].find((candidate) => spawnSync(candidate, ['version']).status === 0);
  if (!go) throw new Error(`The time-skipping test server is not built (${TIME_SKIPPING_SERVER_BINARY}) and Go is not installed to build it.`);
  mkdirSync(dirname(TIME_SKIPPING_SERVER_BINARY), { recursive: true });
  log(`Building the time-skipping test server with ${go} build (first time only, a few minutes)…`);
  const started = Date.now();
  const built = spawnSync(go, ['build', '-o', TIME_SKIPPING_SERVER_BINARY, '.'], { cwd: SOURCE, stdio: ['ignore', 'inherit', 'inherit'] });
  if (built.status !== 0) throw new Error(`go build of the time-skipping test server failed (exit ${built.status})`);
  log(`Built the time-skipping test server in ${Math.round((Date.now() - started) / 1000)} s`);
  return TIME_SKIPPING_SERVER_BINARY;
}

export interface TimeSkippingServer {
  address: string;
  namespace: string;
  stop(): Promise<void>;
}

/** Starts the server and waits for the line that says where it listens. */
export async function startTimeSkippingServer(binary: string): Promise<TimeSkippingServer> {
  const child: ChildProcess = spawn(binary, [], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = await new Promise<{ address: string; namespace: string }>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const line = output.split('\n').find((candidate) => candidate.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`The time-skipping test server exited with ${code} before it was ready`)));
  });
  return {
    ...ready,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
