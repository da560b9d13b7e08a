import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { generateApiKey } from '../../platform/secrets';
import { runEntryPoint, runStart, runToEnd } from '../support/processes';
import { call } from '../support/service';
import { waitUntil } from '../support/wait';

const scratch = mkdtempSync(join(tmpdir(), 'sandbox-start-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** What a newcomer reads off `npm start`: the API URL and the demo key. */
async function startAllInOne(env: Record<string, string | undefined>) {
  const running = runStart({
    PORT: '0',
    RELAY_PORT: '0',
    HL7_MLLP_PORT: 'off',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_URL: undefined,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `start-test-${randomUUID()}`,
    ...env,
  });
  await running.waitFor(/Stop with Ctrl\+C\./);
  const [, baseUrl] = running.output().match(/ {2}API +(http:\/\/\S+)/)!;
  const [, demoKey] = running.output().match(/Demo API key +(sk_sandbox_\S+)/)!;
  const [, relayUrl] = running.output().match(/Relay receiver +(http:\/\/\S+)/)!;
  return { running, baseUrl: baseUrl!, demoKey: demoKey!, relayUrl: relayUrl! };
}

/** The processes a process has started and that still run (Linux: /proc). */
function childProcessesOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean);
}

/**
 * How many C heap arenas glibc's malloc has made beside the main one (Linux: /proc). Each is a 64 MiB
 * reservation at a 64 MiB boundary: its used part read-write, the rest (if any) not accessible.
 */
function mallocArenasBesideMain(pid: number): number {
  const HEAP_MAX = 64 * 1024 * 1024;
  const mappings = readFileSync(`/proc/${pid}/maps`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [range, permissions, , , inode, path] = line.split(/\s+/);
      const [start, end] = range!.split('-').map((address) => Number.parseInt(address, 16));
      return { start: start!, end: end!, permissions: permissions!, anonymous: inode === '0' && !path };
    });
  return mappings.filter((mapping, index) => {
    if (!mapping.anonymous || mapping.permissions !== 'rw-p' || mapping.start % HEAP_MAX !== 0) return false;
    const rest = mappings[index + 1];
    const reservedEnd = rest?.anonymous && rest.permissions === '---p' && rest.start === mapping.end ? rest.end : mapping.end;
    return reservedEnd - mapping.start === HEAP_MAX;
  }).length;
}

/** The shutdown steps the process logged, in the order of their log timestamps. */
function shutdownSteps(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"msg":"stopped '))
    .map((line) => JSON.parse(line) as { time: number; msg: string })
    .sort((a, b) => a.time - b.time)
    .map((entry) => entry.msg.slice('stopped '.length));
}

// Each start bundles the workflows and starts a Temporal dev server, which a loaded machine makes slow.
const WHOLE_SERVICE_TIMEOUT_MS = 120_000;

describe('npm start (embedded database)', () => {
  it(
    'prints a working demo key and every URL, keeps the key across restarts, and stops cleanly on SIGTERM',
    async () => {
      const dataDir = join(scratch, 'all-in-one');
      const first = await startAllInOne({ DATA_DIR: dataDir });
      const output = first.running.output();
      expect(output).toContain('API reference');
      expect(output).toContain(`${first.baseUrl}/docs`);
      expect(output).toContain(`${first.baseUrl}/.well-known/smart-configuration`);
      expect(output).toContain(`embedded PGlite in ${join(dataDir, 'pglite')}`);
      expect(output).toMatch(/self-check passed in \d+ ms/);
      expect(output).toContain(`curl -H "Authorization: Bearer ${first.demoKey}" ${first.baseUrl}/v1/connections`);
      // Compiled before it ran (bin/start.mjs): esbuild's process has ended, nothing else was started
      // beside the service (Temporal is external here, the database embedded).
      expect(childProcessesOf(first.running.child.pid!)).toEqual([]);
      // The script caps malloc's arenas (MALLOC_ARENA_MAX, bin/start.mjs): every thread no longer keeps its own.
      expect(mallocArenasBesideMain(first.running.child.pid!)).toBeLessThanOrEqual(1);
      // And keeps glibc from holding up to 64 MiB of freed memory at each heap's top (bin/start.mjs).
      expect(readFileSync(`/proc/${first.running.child.pid}/environ`, 'utf8').split('\0')).toContain('MALLOC_TRIM_THRESHOLD_=131072');

      const listed = await call(first.baseUrl, '/v1/connections', { key: first.demoKey });
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({ data: [], next_cursor: null });
      const refused = await call(first.baseUrl, '/v1/connections');
      expect(refused.status).toBe(401);
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      await call(first.baseUrl, '/v1/connections', { key: first.demoKey, method: 'POST', body: { name: 'kept across restarts' } });
      const signingKeys = (await call(first.baseUrl, '/.well-known/jwks.json')).body.keys;
      expect(signingKeys).toEqual([expect.objectContaining({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) })]);

      // The demo organization's webhooks go to the relay receiver, which verifies them.
      const triggered = await call(first.baseUrl, '/v1/webhooks/trigger-mock-event', { key: first.demoKey, method: 'POST' });
      expect(triggered.status).toBe(202);
      const relayed = await waitUntil(
        async () =>
          (await call(first.relayUrl, '/deliveries')).body.data.find((record: { delivery_id: string }) => record.delivery_id === triggered.body.id),
        { what: 'the mock event reaching the relay receiver' },
      );
      expect(relayed.verified).toBe(true);

      expect(await first.running.stop('SIGTERM')).toBe(0);
      expect(shutdownSteps(first.running.output())).toEqual(['API', 'worker', 'relay receiver', 'Temporal client', 'database']);

      const second = await startAllInOne({ DATA_DIR: dataDir });
      try {
        expect(second.demoKey).toBe(first.demoKey);
        const afterRestart = await call(second.baseUrl, '/v1/connections', { key: second.demoKey });
        expect(afterRestart.body.data.map((connection: { name: string }) => connection.name)).toEqual(['kept across restarts']);
        expect((await call(second.baseUrl, '/.well-known/jwks.json')).body.keys).toEqual(signingKeys);
      } finally {
        expect(await second.running.stop('SIGINT')).toBe(0);
      }
    },
    WHOLE_SERVICE_TIMEOUT_MS,
  );

  it(
    'uses DEMO_API_KEY when it is set',
    async () => {
      const fixedKey = generateApiKey();
      const started = await startAllInOne({ DATA_DIR: join(scratch, 'fixed-key'), DEMO_API_KEY: fixedKey });
      try {
        expect(started.demoKey).toBe(fixedKey);
        expect((await call(started.baseUrl, '/v1/settings/webhook', { key: fixedKey })).status).toBe(200);
      } finally {
        await started.running.stop();
      }
    },
    WHOLE_SERVICE_TIMEOUT_MS,
  );
});

describe('npm run start:api and start:worker (production shape)', () => {
  it('refuse to run apart without a shared database and Temporal, saying what to set', async () => {
    const result = await runToEnd('bin/start-api.ts', [], {
      DATABASE_URL: undefined,
      TEMPORAL_ADDRESS: undefined,
      DATA_DIR: join(scratch, 'refused'),
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain('DATABASE_URL: the Postgres both processes share');
    expect(result.output).toContain('TEMPORAL_ADDRESS: the Temporal frontend');
  });

  it('run as two processes against Postgres and Temporal: the API is ready and the worker polls the queue', async () => {
    const taskQueue = `split-test-${randomUUID()}`;
    const env = {
      DATABASE_URL: inject('databaseUrl'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      PORT: '0',
      HL7_MLLP_PORT: 'off',
      HOST: '127.0.0.1',
      NODE_ENV: 'production',
    };
    const api = runEntryPoint('bin/start-api.ts', [], env);
    const worker = runEntryPoint('bin/start-worker.ts', [], env);
    try {
      const [, port] = await api.waitFor(/listening on 127\.0\.0\.1:(\d+)/);
      await worker.waitFor(/Worker polling task queue/);
      expect((await call(`http://127.0.0.1:${port}`, '/readyz')).status).toBe(200);

      const connection = await Connection.connect({ address: inject('temporalAddress') });
      const client = new Client({ connection });
      const result = await client.workflow.execute('selfCheckWorkflow', {
        taskQueue,
        workflowId: `split-${randomUUID()}`,
        workflowExecutionTimeout: '20 seconds',
      });
      expect(result).toEqual({ organizations: expect.any(Number) });
      await connection.close();
    } finally {
      expect(await api.stop()).toBe(0);
      expect(await worker.stop()).toBe(0);
    }
  });
});
