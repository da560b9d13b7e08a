import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface RunningProcess {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  /** Resolves with the first match of `pattern` in the output so far or to come. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs one of the bin/ entry points the way `npm run` does, capturing stdout and stderr together. */
export function runEntryPoint(script: string, args: string[], env: Record<string, string | undefined>): RunningProcess {
  return runNode(['--import', 'tsx', script, ...args], script, env);
}

/**
 * `npm start`'s script as package.json has it, split as a POSIX shell reads it: the environment it
 * sets (`NAME=value` before the command) and node's own arguments with bin/start.mjs (no tsx).
 */
export function startScript(): { env: Record<string, string>; nodeArgs: string[] } {
  const { start } = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }).scripts;
  const words = start.split(' ');
  const env: Record<string, string> = {};
  while (words[0]?.includes('=')) {
    const [name, value] = words.shift()!.split('=');
    env[name!] = value!;
  }
  const [command, ...nodeArgs] = words;
  if (command !== 'node') throw new Error(`npm start's script does not run node: ${start}`);
  return { env, nodeArgs };
}

/** Runs `npm start`'s script (startScript) with `env` on top of its own. */
export function runStart(env: Record<string, string | undefined>): RunningProcess {
  const script = startScript();
  return runNode(script.nodeArgs, 'npm start', { ...script.env, ...env });
}

function runNode(args: string[], script: string, env: Record<string, string | undefined>): RunningProcess {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env } as NodeJS.ProcessEnv });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.on('exit', () => {
    for (const listener of listeners) listener();
  });

  return {
    child,
    output: () => output,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match) {
            finish();
            resolve(match);
          } else if (child.exitCode !== null) {
            finish();
            reject(new Error(`${script} exited with ${child.exitCode} before printing ${pattern}:\n${output}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${script} did not print ${pattern} within ${timeoutMs} ms:\n${output}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      }),
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs an entry point to completion. */
export async function runToEnd(
  script: string,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; output: string }> {
  const running = runEntryPoint(script, args, env);
  const code = await new Promise<number | null>((resolve) => running.child.on('exit', resolve));
  return { code, output: running.output() };
}
