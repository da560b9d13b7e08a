import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Logger } from 'pino';

/**
 * The pinned Temporal CLI. Later tags carry a `replace` directive, so `go install` refuses them
 * (CONVENTIONS.md).
 */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export class TemporalCliMissingError extends Error {
  override name = 'TemporalCliMissingError';
}

/**
 * Finds the Temporal CLI: TEMPORAL_CLI_PATH, then `temporal` on PATH, then Go's bin folder.
 * Returns undefined when none is there.
 */
export function findTemporalCli(explicitPath?: string): string | undefined {
  if (explicitPath) {
    if (!isExecutable(explicitPath)) {
      throw new TemporalCliMissingError(`TEMPORAL_CLI_PATH is set to ${explicitPath}, but no executable file is there.`);
    }
    return explicitPath;
  }
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((directory) => join(directory, 'temporal'))
    .find(isExecutable);
  if (onPath) return onPath;
  const goBinary = join(goBinDirectory(), 'temporal');
  return isExecutable(goBinary) ? goBinary : undefined;
}

/**
 * Finds the CLI or builds it with `go install` into Go's bin folder, so every clone on the machine
 * (CI's included) reuses the same binary.
 */
export async function ensureTemporalCli(logger: Logger, explicitPath?: string): Promise<string> {
  const found = findTemporalCli(explicitPath);
  if (found) return found;
  if (!hasGo()) {
    throw new TemporalCliMissingError(
      [
        "No Temporal CLI was found (TEMPORAL_CLI_PATH, `temporal` on PATH, Go's bin folder), and Go is not installed to build one.",
        'Any of these gets you going:',
        '  - macOS: brew install temporal',
        '  - any OS: download the CLI from https://temporal.io/download and put it on PATH (or set TEMPORAL_CLI_PATH)',
        `  - with Go: go install ${TEMPORAL_CLI_MODULE}`,
        '  - with Docker: docker compose up   (runs Postgres, Temporal and this service together)',
        '  - or point at a running server: TEMPORAL_ADDRESS=host:7233',
      ].join('\n'),
    );
  }
  const target = join(goBinDirectory(), 'temporal');
  logger.info(`No Temporal CLI found; building ${TEMPORAL_CLI_MODULE} with go install into ${goBinDirectory()} (first time only, a few minutes)…`);
  const started = Date.now();
  const progress = setInterval(() => {
    logger.info(`…still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s)`);
  }, 30_000);
  try {
    await runGoInstall();
  } finally {
    clearInterval(progress);
  }
  if (!isExecutable(target)) {
    throw new TemporalCliMissingError(`go install finished but ${target} is not there; check GOBIN/GOPATH.`);
  }
  logger.info(`Temporal CLI built in ${Math.round((Date.now() - started) / 1000)} s: ${target}`);
  return target;
}

function runGoInstall(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['install', TEMPORAL_CLI_MODULE], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve();
      else reject(new TemporalCliMissingError(`go install ${TEMPORAL_CLI_MODULE} failed with exit code ${code}.`));
    });
  });
}

function goBinDirectory(): string {
  const fromGo = (name: string) => {
    const result = spawnSync('go', ['env', name], { encoding: 'utf8' });
    return result.status === 0 ? result.stdout.trim() : '';
  };
  const gobin = fromGo('GOBIN');
  if (gobin) return gobin;
  const gopath = fromGo('GOPATH').split(delimiter)[0];
  return join(gopath || join(homedir(), 'go'), 'bin');
}

function hasGo(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
