import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findTemporalCli, TemporalCliMissingError } from '../../runtime/temporal-cli';
import { runToEnd } from '../support/processes';

const emptyHome = mkdtempSync(join(tmpdir(), 'sandbox-no-cli-'));
afterAll(() => rmSync(emptyHome, { recursive: true, force: true }));

describe('finding the Temporal CLI', () => {
  it('reports a TEMPORAL_CLI_PATH that points at nothing', () => {
    expect(() => findTemporalCli('/nonexistent/temporal')).toThrow(TemporalCliMissingError);
    expect(() => findTemporalCli('/nonexistent/temporal')).toThrow('TEMPORAL_CLI_PATH is set to /nonexistent/temporal');
  });

  it('finds the CLI this run uses', () => {
    expect(findTemporalCli()).toMatch(/\/temporal$/);
  });

  it("builds the pinned CLI with go install into Go's bin folder when none is found, saying so", async () => {
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
    try {
      const result = await runToEnd('bin/install-temporal.ts', [], {
        PATH: `${fakeGoDir}:/usr/bin:/bin`,
        HOME: emptyHome,
        TEMPORAL_CLI_PATH: undefined,
        LOG_LEVEL: 'info',
      });
      expect(result.code).toBe(0);
      expect(result.output).toContain('building github.com/temporalio/cli/cmd/temporal@v1.5.1 with go install');
      expect(result.output).toContain(`Temporal CLI: ${goBin}/temporal`);
      expect(readFileSync(join(fakeGoDir, 'installed'), 'utf8').trim()).toBe('github.com/temporalio/cli/cmd/temporal@v1.5.1');
    } finally {
      rmSync(fakeGoDir, { recursive: true, force: true });
    }
  });

  it('lists the ways to get one when neither the CLI nor Go is there', async () => {
    const result = await runToEnd('bin/start.ts', [], {
      PATH: emptyHome,
      HOME: emptyHome,
      TEMPORAL_ADDRESS: undefined,
      TEMPORAL_CLI_PATH: undefined,
      DATA_DIR: join(emptyHome, '.data'),
    });
    expect(result.code).toBe(1);
    for (const way of [
      'brew install temporal',
      'temporal.io/download',
      'go install github.com/temporalio/cli/cmd/temporal@v1.5.1',
      'docker compose up',
      'TEMPORAL_ADDRESS',
    ]) {
      expect(result.output).toContain(way);
    }
  });
});
