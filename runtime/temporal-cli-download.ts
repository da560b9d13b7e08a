import { createHash } from 'node:crypto';
import { chmodSync, createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { extract } from 'tar';

/** The pinned release, the same version `go install` builds (CONVENTIONS.md, Runtime shape). */
export const TEMPORAL_CLI_VERSION = '1.5.1';
export const TEMPORAL_CLI_RELEASE_URL = `https://github.com/temporalio/cli/releases/download/v${TEMPORAL_CLI_VERSION}`;
/** The checksums file GoReleaser publishes beside the archives of every release. */
const CHECKSUMS_FILE = 'checksums.txt';

// A firewall that drops packets would otherwise hold start-up for minutes before the go install fallback.
const CONNECT_TIMEOUT_MS = 15_000;
const STALL_TIMEOUT_MS = 30_000;
const PROGRESS_EVERY_MS = 1_000;

export class TemporalCliDownloadError extends Error {
  override name = 'TemporalCliDownloadError';
}

/** Where the downloaded CLI lives: one folder per version under the ignored tools folder. */
export function downloadedCliPath(toolsDir: string): string {
  return resolve(toolsDir, `temporal-cli-${TEMPORAL_CLI_VERSION}`, process.platform === 'win32' ? 'temporal.exe' : 'temporal');
}

/**
 * The release archive for this OS and architecture. Windows gets the tar.gz too: the release
 * publishes one beside the zip for Temporal's SDKs, so a single extractor serves every platform.
 */
export function releaseArchiveName(platform: NodeJS.Platform = process.platform, arch: string = process.arch): string {
  const os = ({ linux: 'linux', darwin: 'darwin', win32: 'windows' } as Partial<Record<NodeJS.Platform, string>>)[platform];
  const goArch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[arch];
  if (!os || !goArch) throw new TemporalCliDownloadError(`Temporal publishes no CLI release for ${platform}/${arch}`);
  return `temporal_cli_${TEMPORAL_CLI_VERSION}_${os}_${goArch}.tar.gz`;
}

/**
 * Downloads the pinned release archive, checks its SHA-256 against the release's checksums file and
 * extracts the CLI into `toolsDir`. Nothing is installed unless the checksum matches. Returns the path.
 */
export async function downloadTemporalCli(logger: Logger, options: { baseUrl: string; toolsDir: string }): Promise<string> {
  const started = Date.now();
  const archiveName = releaseArchiveName();
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const target = downloadedCliPath(options.toolsDir);
  const staging = resolve(options.toolsDir, `.temporal-cli-${TEMPORAL_CLI_VERSION}-${process.pid}`);
  const archiveFile = `${staging}.tar.gz`;

  const expected = expectedChecksum(await (await get(`${baseUrl}/${CHECKSUMS_FILE}`)).text(), archiveName);
  logger.info(`Downloading the Temporal CLI ${TEMPORAL_CLI_VERSION} from ${baseUrl}/${archiveName}…`);
  mkdirSync(options.toolsDir, { recursive: true });
  try {
    const response = await get(`${baseUrl}/${archiveName}`);
    const size = Number(response.headers.get('content-length')) || undefined;
    const hash = createHash('sha256');
    let received = 0;
    let reported = 0;
    let lastReport = 0;
    const stall = new AbortController();
    let stallTimer = setTimeout(() => stall.abort(), STALL_TIMEOUT_MS);
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        received += chunk.length;
        clearTimeout(stallTimer);
        stallTimer = setTimeout(() => stall.abort(), STALL_TIMEOUT_MS);
        if (Date.now() - lastReport >= PROGRESS_EVERY_MS) {
          lastReport = Date.now();
          reported = received;
          logger.info(`…Temporal CLI download: ${progress(received, size)}`);
        }
        done(null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), measure, createWriteStream(archiveFile), {
        signal: stall.signal,
      });
    } catch (error) {
      throw new TemporalCliDownloadError(
        stall.signal.aborted
          ? `the download stalled (no data for ${STALL_TIMEOUT_MS / 1000} s)`
          : `the download broke off: ${(error as Error).message}`,
      );
    } finally {
      clearTimeout(stallTimer);
    }
    if (reported !== received) logger.info(`…Temporal CLI download: ${progress(received, size)}`);
    const actual = hash.digest('hex');
    if (actual !== expected) {
      throw new TemporalCliDownloadError(
        `${archiveName} does not match its published checksum (${CHECKSUMS_FILE} says ${expected}, the download is ${actual}); it was refused and nothing was installed`,
      );
    }

    mkdirSync(staging, { recursive: true });
    await extract({ file: archiveFile, cwd: staging });
    const binary = join(staging, process.platform === 'win32' ? 'temporal.exe' : 'temporal');
    if (!existsSync(binary)) throw new TemporalCliDownloadError(`${archiveName} holds no temporal binary`);
    chmodSync(binary, 0o755);
    rmSync(resolve(target, '..'), { recursive: true, force: true });
    renameSync(staging, resolve(target, '..'));
  } finally {
    rmSync(archiveFile, { force: true });
    rmSync(staging, { recursive: true, force: true });
  }
  logger.info(
    `Temporal CLI ${TEMPORAL_CLI_VERSION} downloaded, SHA-256 verified against ${CHECKSUMS_FILE} and installed in ${((Date.now() - started) / 1000).toFixed(1)} s: ${target}`,
  );
  return target;
}

async function get(url: string): Promise<Response> {
  // Limits the wait for the answer's headers only; the body has its own stall timer.
  const connect = new AbortController();
  const timer = setTimeout(() => connect.abort(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetch(url, { signal: connect.signal });
  } catch (error) {
    const cause = connect.signal.aborted ? (connect.signal.reason as Error) : (error as Error & { cause?: Error }).cause;
    throw new TemporalCliDownloadError(`${url} cannot be reached (${cause?.message ?? (error as Error).message})`);
  } finally {
    clearTimeout(timer);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new TemporalCliDownloadError(`${url} answered ${response.status}`);
  }
  return response;
}

/** The archive's line in a `sha256sum`-style file: `<hex>  <name>`. */
function expectedChecksum(checksums: string, archiveName: string): string {
  for (const line of checksums.split('\n')) {
    const [digest, name] = line.trim().split(/\s+\*?/);
    if (name === archiveName && digest && /^[0-9a-f]{64}$/i.test(digest)) return digest.toLowerCase();
  }
  throw new TemporalCliDownloadError(`${CHECKSUMS_FILE} lists no checksum for ${archiveName}`);
}

function progress(received: number, size: number | undefined): string {
  const mb = (bytes: number) => (bytes / 1_048_576).toFixed(1);
  return size ? `${mb(received)} of ${mb(size)} MB (${Math.floor((received / size) * 100)} %)` : `${mb(received)} MB`;
}
