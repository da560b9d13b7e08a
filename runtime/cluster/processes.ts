import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** One process of the local cluster: its output goes to a log file, and the last of it is kept to explain a failed start. */
export interface ManagedProcess {
  name: string;
  pid: number;
  log: string;
  /** Settles with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
  hasExited(): boolean;
  tail(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs: number): Promise<void>;
}

const TAIL_CHARS = 8_000;
const running = new Set<ChildProcess>();

// A supervisor that dies without stopping its cluster takes the processes with it.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function startProcess(
  name: string,
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; log: string; cwd?: string },
): ManagedProcess {
  mkdirSync(dirname(options.log), { recursive: true });
  const log = createWriteStream(options.log, { flags: 'a' });
  // Its own process group: Ctrl+C reaches the supervisor only, which stops the cluster in order.
  const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child);
  let tail = '';
  const append = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      log.end();
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  return {
    name,
    pid: child.pid!,
    log: options.log,
    exited,
    hasExited: () => child.exitCode !== null || child.signalCode !== null,
    tail: () => tail,
    async stop(graceMs) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const forced = sleep(graceMs).then(() => child.kill('SIGKILL'));
      await Promise.race([exited, forced]);
      await exited;
    },
  };
}
