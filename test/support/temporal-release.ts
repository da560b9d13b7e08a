import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import { releaseArchiveName } from '../../runtime/temporal-cli-download';

/**
 * A stand-in for the Temporal CLI's GitHub release, on a local port: the archive for this machine's
 * OS and architecture and a GoReleaser-style checksums.txt, so no test reaches outside the machine.
 */
export interface ReleaseServer {
  url: string;
  /** Paths asked for, in order. */
  requests: string[];
  close(): Promise<void>;
}

export function serveRelease(archive: Buffer, checksums = checksumsFor(archive)): Promise<ReleaseServer> {
  const requests: string[] = [];
  const files = new Map<string, Buffer>([
    [`/${releaseArchiveName()}`, archive],
    ['/checksums.txt', Buffer.from(checksums)],
  ]);
  const server = createServer((request, response) => {
    requests.push(request.url ?? '');
    const body = files.get(request.url ?? '');
    if (!body) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        requests,
        close: () => new Promise((closed) => server.close(() => closed())),
      });
    });
  });
}

/** checksums.txt as the release publishes it: `<sha256>  <file>` per archive. */
export function checksumsFor(archive: Buffer, digest = createHash('sha256').update(archive).digest('hex')): string {
  return [`${'0'.repeat(64)}  temporal_cli_1.5.1_plan9_amd64.tar.gz`, `${digest}  ${releaseArchiveName()}`, ''].join('\n');
}

/** A release-shaped tar.gz: `temporal` (from `binary`, a file path, or a script text) and LICENSE at its root. */
export async function packRelease(binary: { path: string } | { script: string }): Promise<Buffer> {
  const folder = mkdtempSync(join(tmpdir(), 'sandbox-release-'));
  try {
    writeFileSync(join(folder, 'temporal'), 'path' in binary ? readFileSync(binary.path) : binary.script, { mode: 0o755 });
    writeFileSync(join(folder, 'LICENSE'), 'MIT\n');
    const archive = join(folder, 'release.tar.gz');
    // The lowest level: the real CLI is ~100 MB and only speed matters here.
    await create({ gzip: { level: 1 }, file: archive, cwd: folder, portable: true }, ['temporal', 'LICENSE']);
    return readFileSync(archive);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
