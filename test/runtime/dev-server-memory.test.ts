import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { DEV_SERVER_CACHED_WORKFLOWS, provideTemporal } from '../../runtime/services';
import { freePort } from '../support/ports';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-dev-server-memory-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The arguments and environment of the process whose arguments hold `--port <port>` (the kernel's view: Linux). */
function serverOn(port: number): { argv: string[]; environment: string[] } {
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.includes('start-dev') && argv[argv.indexOf('--port') + 1] === String(port)) {
        return { argv, environment: readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0') };
      }
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  throw new Error(`no dev server on port ${port}`);
}

describe("npm start's Temporal dev server", () => {
  it.runIf(process.platform === 'linux')(
    'runs with a soft memory limit and a bounded history cache, so a backlog of waiting deliveries is not held in its heap',
    { timeout: 90_000 },
    async () => {
      const port = await freePort();
      const config = loadConfig({ ...process.env, DATA_DIR: scratch, TEMPORAL_PORT: String(port), TEMPORAL_UI_PORT: String(await freePort()) });
      const endpoint = await provideTemporal({ ...config, TEMPORAL_ADDRESS: undefined }, createLogger('warn', { pretty: false }));
      try {
        const server = serverOn(port);
        expect(server.environment).toContain('GOMEMLIMIT=128MiB');
        expect(server.argv).toContain(`history.hostLevelCacheMaxSize=${DEV_SERVER_CACHED_WORKFLOWS}`);
      } finally {
        await endpoint.stop();
      }
    },
  );
});
