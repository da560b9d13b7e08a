import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { goBinDirectory } from '../../runtime/temporal-cli';

/**
 * The time-skipping Temporal server the test run shares (source in ./time-skipping-server/): it
 * fast-forwards a workflow's timers whenever the workflow has no work in flight.
 */

const SOURCE = fileURLToPath(new URL('./time-skipping-server/', import.meta.url));
const SOURCE_FILES = ['go.mod', 'go.sum', 'main.go'];

/**
 * Where the built server is kept: TEMPORAL_TIME_SKIPPING_SERVER, else Go's bin folder under a name
 * that carries a hash of its source, like the Temporal CLI (CONVENTIONS.md, where the product
 * differs): every clone on the machine, CI's fresh ones included, reuses one build of that source,
 * and a change to the source builds anew.
 */
function timeSkippingServerBinary(): string {
  if (process.env.TEMPORAL_TIME_SKIPPING_SERVER) return process.env.TEMPORAL_TIME_SKIPPING_SERVER;
  const source = createHash('sha256');
  for (const file of SOURCE_FILES) source.update(readFileSync(join(SOURCE, file)));
  return join(goBinDirectory(), `time-skipping-server-${source.digest('hex').slice(0, 12)}`);
}

/** Builds the server from the Go module proxy on first use on this machine (minutes), then reuses it. */
export function ensureTimeSkippingServer(log: (message: string) => void): string {
  const binary = timeSkippingServerBinary();
  if (existsSync(binary)) return binary;
  const go = ['go', '/usr/local/go/bin/go'].find((candidate) => spawnSync(candidate, ['version']).status === 0);
  if (!go) throw new Error(`The time-skipping test server is not built (${binary}) and Go is not installed to build it.`);
  log(
    `Building the time-skipping test server (Temporal server v1.32, test/support/time-skipping-server/) with ${go} build into ${binary}: once per machine and source version, a few minutes…`,
  );
  const started = Date.now();
  // Built under a name of its own and renamed when whole: another clone's run may be looking for it.
  const partial = `${binary}.${process.pid}.partial`;
  mkdirSync(dirname(binary), { recursive: true });
  const built = spawnSync(go, ['build', '-o', partial, '.'], { cwd: SOURCE, stdio: ['ignore', 'inherit', 'inherit'] });
  if (built.status !== 0) {
    rmSync(partial, { force: true });
    throw new Error(`go build of the time-skipping test server failed (exit ${built.status})`);
  }
  renameSync(partial, binary);
  log(`Built the time-skipping test server in ${Math.round((Date.now() - started) / 1000)} s`);
  return binary;
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
