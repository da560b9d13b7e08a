import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findTemporalCli, TemporalCliMissingError } from '../../runtime/temporal-cli';
import { releaseArchiveName } from '../../runtime/temporal-cli-download';
import { freePort } from '../support/ports';
import { runToEnd } from '../support/processes';
import { checksumsFor, packRelease, serveRelease } from '../support/temporal-release';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-no-cli-'));
const emptyHome = join(scratch, 'home');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A machine with neither Go nor the CLI: system folders only on PATH, a HOME without ~/go. */
const NO_GO_NO_CLI = { PATH: '/usr/bin:/bin', HOME: emptyHome, TEMPORAL_CLI_PATH: undefined, LOG_LEVEL: 'info' };

const FAKE_CLI = '#!/bin/sh\necho "temporal version 1.5.1 (the test release)"\n';

/** A URL on this machine where nothing listens: the release "cannot be reached", as offline. */
async function unreachableUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}/releases`;
}

describe('finding the Temporal CLI', () => {
  it('reports a TEMPORAL_CLI_PATH that points at nothing', () => {
    expect(() => findTemporalCli({ cliPath: '/nonexistent/temporal' })).toThrow(TemporalCliMissingError);
    expect(() => findTemporalCli({ cliPath: '/nonexistent/temporal' })).toThrow('TEMPORAL_CLI_PATH is set to /nonexistent/temporal');
  });

  it('finds the CLI this run uses', () => {
    expect(findTemporalCli()).toMatch(/\/temporal$/);
  });
});

describe('getting the Temporal CLI without Go', () => {
  it('downloads the pinned release, verifies its checksum, installs it into TOOLS_DIR and reuses it afterwards', async () => {
    const toolsDir = join(scratch, 'tools-download');
    const release = await serveRelease(await packRelease({ script: FAKE_CLI }));
    try {
      const env = { ...NO_GO_NO_CLI, TOOLS_DIR: toolsDir, TEMPORAL_CLI_DOWNLOAD_URL: release.url };
      const result = await runToEnd('bin/install-temporal.ts', [], env);
      const installed = join(toolsDir, 'temporal-cli-1.5.1', 'temporal');
      expect(result.code, result.output).toBe(0);
      expect(result.output).toContain(`Downloading the Temporal CLI 1.5.1 from ${release.url}/${releaseArchiveName()}`);
      expect(result.output).toMatch(/…Temporal CLI download: [\d.]+ of [\d.]+ MB \(100 %\)/);
      expect(result.output).toMatch(/Temporal CLI 1\.5\.1 downloaded, SHA-256 verified against checksums\.txt and installed in [\d.]+ s/);
      expect(result.output).toContain(`Temporal CLI: ${installed}`);
      expect(execFileSync(installed, { encoding: 'utf8' })).toBe('temporal version 1.5.1 (the test release)\n');
      expect(readdirSync(toolsDir)).toEqual(['temporal-cli-1.5.1']);
      expect(release.requests).toEqual(['/checksums.txt', `/${releaseArchiveName()}`]);

      const again = await runToEnd('bin/install-temporal.ts', [], env);
      expect(again.output).toContain(`Temporal CLI: ${installed}`);
      expect(again.output).not.toContain('Downloading');
      expect(release.requests).toHaveLength(2);
    } finally {
      await release.close();
    }
  });

  it('refuses a download that does not match its published checksum and installs nothing', async () => {
    const toolsDir = join(scratch, 'tools-mismatch');
    const archive = await packRelease({ script: FAKE_CLI });
    const release = await serveRelease(archive, checksumsFor(archive, 'ab'.repeat(32)));
    try {
      const result = await runToEnd('bin/install-temporal.ts', [], { ...NO_GO_NO_CLI, TOOLS_DIR: toolsDir, TEMPORAL_CLI_DOWNLOAD_URL: release.url });
      expect(result.code).toBe(1);
      expect(result.output).toContain(`${releaseArchiveName()} does not match its published checksum (checksums.txt says ${'ab'.repeat(32)}`);
      expect(result.output).toContain('it was refused and nothing was installed');
      expect(readdirSync(toolsDir)).toEqual([]);
    } finally {
      await release.close();
    }
  });

  it("falls back to go install into Go's bin folder when the release cannot be reached, saying why", async () => {
    // A stand-in `go` (the toolchain lies outside the product): answers `go env` and "installs" a binary.
    const fakeGoDir = mkdtempSync(join(tmpdir(), 'sandbox-fake-go-'));
    const goBin = join(fakeGoDir, 'bin');
    writeFileSync(
      join(fakeGoDir, 'go'),
      [
        '#!/bin/sh',
        `case "$1" in`,
        `  version) echo "go version go1.26 linux/amd64" ;;`,
        `  env) [ "$2" = GOBIN ] && echo "${goBin}" ;;`,
        `  install) mkdir -p "${goBin}" && echo "$2" > "${fakeGoDir}/installed" && printf '#!/bin/sh\necho fake temporal\n' > "${goBin}/temporal" && chmod +x "${goBin}/temporal" ;;`,
        'esac',
      ].join('\n'),
      { mode: 0o755 },
    );
    const offline = await unreachableUrl();
    try {
      const result = await runToEnd('bin/install-temporal.ts', [], {
        ...NO_GO_NO_CLI,
        PATH: `${fakeGoDir}:/usr/bin:/bin`,
        TOOLS_DIR: join(scratch, 'tools-offline'),
        TEMPORAL_CLI_DOWNLOAD_URL: offline,
      });
      expect(result.code, result.output).toBe(0);
      expect(result.output).toContain(
        `The Temporal CLI release could not be downloaded (${offline}/checksums.txt cannot be reached (connect ECONNREFUSED`,
      );
      expect(result.output).toContain('building github.com/temporalio/cli/cmd/temporal@v1.5.1 with go install');
      expect(result.output).toMatch(/Temporal CLI built with go install in \d+ s/);
      expect(result.output).toContain(`Temporal CLI: ${goBin}/temporal`);
      expect(readFileSync(join(fakeGoDir, 'installed'), 'utf8').trim()).toBe('github.com/temporalio/cli/cmd/temporal@v1.5.1');
    } finally {
      rmSync(fakeGoDir, { recursive: true, force: true });
    }
  });

  it('lists the ways to get one when neither the CLI, the release nor Go is there', async () => {
    const result = await runToEnd('bin/start.ts', [], {
      ...NO_GO_NO_CLI,
      PATH: emptyHome,
      TEMPORAL_ADDRESS: undefined,
      TEMPORAL_CLI_DOWNLOAD_URL: await unreachableUrl(),
      TOOLS_DIR: join(scratch, 'tools-nothing'),
      DATA_DIR: join(scratch, '.data'),
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain('the pinned release could not be downloaded');
    for (const way of [
      'brew install temporal',
      'temporal.io/download',
      'TEMPORAL_CLI_DOWNLOAD_URL',
      'go install github.com/temporalio/cli/cmd/temporal@v1.5.1',
      'docker compose up',
      'TEMPORAL_ADDRESS',
    ]) {
      expect(result.output).toContain(way);
    }
  });
});
