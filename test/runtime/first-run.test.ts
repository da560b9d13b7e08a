import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../runtime/temporal-cli';
import { freePort } from '../support/ports';
import { runStart } from '../support/processes';
import { call } from '../support/service';
import { packRelease, serveRelease } from '../support/temporal-release';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-first-run-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// Packing the ~100 MB CLI, downloading it, bundling the workflows and starting a dev server.
const FIRST_RUN_TIMEOUT_MS = 180_000;

describe('npm start on a laptop with neither Go nor the Temporal CLI', () => {
  it(
    'downloads the pinned CLI, verifies it, starts Temporal with it and says what it did and how long it took',
    async () => {
      // The release served locally holds the real CLI this run uses, packed as Temporal packs it.
      const realCli = findTemporalCli();
      if (!realCli) throw new Error('The test run has no Temporal CLI to pack');
      const release = await serveRelease(await packRelease({ path: realCli }));
      const home = join(scratch, 'home');
      mkdirSync(home);
      const toolsDir = join(scratch, 'tools');
      const [temporalPort, uiPort] = [await freePort(), await freePort()];
      const running = runStart({
        PATH: '/usr/bin:/bin',
        HOME: home,
        TEMPORAL_CLI_PATH: undefined,
        TEMPORAL_ADDRESS: undefined,
        TEMPORAL_CLI_DOWNLOAD_URL: release.url,
        TOOLS_DIR: toolsDir,
        TEMPORAL_PORT: String(temporalPort),
        TEMPORAL_UI_PORT: String(uiPort),
        TEMPORAL_TASK_QUEUE: `first-run-${randomUUID()}`,
        DATA_DIR: join(scratch, 'data'),
        DATABASE_URL: undefined,
        PORT: '0',
        RELAY_PORT: '0',
        HL7_MLLP_PORT: 'off',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      });
      let exitCode: number | null;
      try {
        await running.waitFor(/Stop with Ctrl\+C\./, FIRST_RUN_TIMEOUT_MS);
        const output = running.output();
        const installed = join(toolsDir, 'temporal-cli-1.5.1', 'temporal');
        expect(output).toContain(`Downloading the Temporal CLI 1.5.1 from ${release.url}/temporal_cli_1.5.1_`);
        expect(output).toMatch(/…Temporal CLI download: [\d.]+ of [\d.]+ MB \(100 %\)/);
        expect(output).toMatch(
          new RegExp(`Temporal CLI 1\\.5\\.1 downloaded, SHA-256 verified against checksums\\.txt and installed in [\\d.]+ s: ${installed}`),
        );
        expect(output).toContain(`Starting the Temporal dev server (${installed}) on port ${temporalPort}`);
        expect(output).toContain(`Temporal Web UI  http://localhost:${uiPort}`);
        expect(output).toMatch(/self-check passed in \d+ ms/);

        const [, baseUrl] = output.match(/ {2}API +(http:\/\/\S+)/)!;
        expect((await call(baseUrl!, '/readyz')).status).toBe(200);
      } finally {
        exitCode = await running.stop('SIGTERM');
        await release.close();
      }
      expect(exitCode).toBe(0);
      expect(running.output()).toContain('stopped Temporal dev server');
    },
    FIRST_RUN_TIMEOUT_MS + 30_000,
  );
});
