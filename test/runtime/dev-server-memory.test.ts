import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { provideTemporal } from '../../runtime/services';
import { freePort } from '../support/ports';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-dev-server-memory-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment of the process whose arguments hold `--port <port>` (the kernel's view: Linux). */
function environmentOfServerOn(port: number): string[] {
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.includes('start-dev') && argv[argv.indexOf('--port') + 1] === String(port)) {
        return readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      }
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  throw new Error(`no dev server on port ${port}`);
}

describe("npm start's Temporal dev server", () => {
  it.runIf(process.platform === 'linux')(
    'runs with a soft memory limit, so a backlog of waiting deliveries does not double its heap',
    { timeout: 90_000 },
    async () => {
      const port = await freePort();
      const config = loadConfig({ ...process.env, DATA_DIR: scratch, TEMPORAL_PORT: String(port), TEMPORAL_UI_PORT: String(await freePort()) });
      const endpoint = await provideTemporal({ ...config, TEMPORAL_ADDRESS: undefined }, createLogger('warn', { pretty: false }));
      try {
        expect(environmentOfServerOn(port)).toContain('GOMEMLIMIT=128MiB');
      } finally {
        await endpoint.stop();
      }
    },
  );
});
