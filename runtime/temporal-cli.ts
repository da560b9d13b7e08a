import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Logger } from 'pino';
import { type Config, DEFAULT_TOOLS_DIR } from '../platform/config';
import {
  downloadedCliPath,
  downloadTemporalCli,
  TEMPORAL_CLI_RELEASE_URL,
  TEMPORAL_CLI_VERSION,
  TemporalCliDownloadError,
} from './temporal-cli-download';

/**
 * The pinned Temporal CLI. Later tags carry a `replace` directive, so `go install` refuses them
 * (CONVENTIONS.md).
 */
export const TEMPORAL_CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

export class TemporalCliMissingError extends Error {
  override name = 'TemporalCliMissingError';
}

export interface TemporalCliOptions {
  /** TEMPORAL_CLI_PATH: this binary and no other. */
  cliPath?: string;
  /** TEMPORAL_CLI_DOWNLOAD_URL: where the release archive and its checksums file are. */
  downloadUrl?: string;
  /** TOOLS_DIR: the ignored project folder the CLI is downloaded into. */
  toolsDir?: string;
}

/** The CLI settings of the configuration (platform/config.ts). */
export function temporalCliOptions(config: Pick<Config, 'TEMPORAL_CLI_PATH' | 'TEMPORAL_CLI_DOWNLOAD_URL' | 'TOOLS_DIR'>): TemporalCliOptions {
  return { cliPath: config.TEMPORAL_CLI_PATH, downloadUrl: config.TEMPORAL_CLI_DOWNLOAD_URL, toolsDir: config.TOOLS_DIR };
}

/**
 * Finds the Temporal CLI: TEMPORAL_CLI_PATH, then `temporal` on PATH, then Go's bin folder, then the
 * one downloaded into TOOLS_DIR. Returns undefined when none is there.
 */
export function findTemporalCli(options: TemporalCliOptions = {}): string | undefined {
  const explicitPath = options.cliPath;
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
  return [join(goBinDirectory(), 'temporal'), downloadedCliPath(options.toolsDir ?? DEFAULT_TOOLS_DIR)].find(isExecutable);
}

/**
 * Finds the CLI; else downloads the pinned release (seconds, no toolchain needed); else, when the
 * release cannot be had, builds it with `go install` into Go's bin folder, so every clone on the
 * machine (CI's included, offline) reuses the same binary.
 */
export async function ensureTemporalCli(logger: Logger, options: TemporalCliOptions = {}): Promise<string> {
  const found = findTemporalCli(options);
  if (found) return found;
  let downloadFailure: string;
  try {
    return await downloadTemporalCli(logger, {
      baseUrl: options.downloadUrl ?? TEMPORAL_CLI_RELEASE_URL,
      toolsDir: options.toolsDir ?? DEFAULT_TOOLS_DIR,
    });
  } catch (error) {
    if (!(error instanceof TemporalCliDownloadError)) throw error;
    downloadFailure = error.message;
  }
  if (!hasGo()) {
    throw new TemporalCliMissingError(
      [
        "No Temporal CLI was found (TEMPORAL_CLI_PATH, `temporal` on PATH, Go's bin folder, TOOLS_DIR),",
        `the pinned release could not be downloaded: ${downloadFailure},`,
        'and Go is not installed to build one.',
        'Any of these gets you going:',
        '  - macOS: brew install temporal',
        '  - any OS: download the CLI from https://temporal.io/download and put it on PATH (or set TEMPORAL_CLI_PATH)',
        '  - behind a proxy or mirror: TEMPORAL_CLI_DOWNLOAD_URL=<a copy of the release> (the archive and checksums.txt)',
        `  - with Go: go install ${TEMPORAL_CLI_MODULE}`,
        '  - with Docker: docker compose up   (runs Postgres, Temporal and this service together)',
        '  - or point at a running server: TEMPORAL_ADDRESS=host:7233',
      ].join('\n'),
    );
  }
  const target = join(goBinDirectory(), 'temporal');
  logger.info(
    `The Temporal CLI release could not be downloaded (${downloadFailure}); building ${TEMPORAL_CLI_MODULE} with go install into ${goBinDirectory()} instead (first time only, a few minutes)…`,
  );
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
  logger.info(`Temporal CLI built with go install in ${Math.round((Date.now() - started) / 1000)} s: ${target}`);
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

/** Where `go install` puts binaries (GOBIN, else the first GOPATH's bin, else ~/go/bin). */
export function goBinDirectory(): string {
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
