import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../platform/config';

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('starts on embedded defaults with nothing set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      HOST: '0.0.0.0',
      PUBLIC_BASE_URL: 'http://localhost:3000',
      DATA_DIR: '.data',
      TEMPORAL_PORT: 7233,
      TEMPORAL_UI_PORT: 8233,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'sandbox',
      RATE_LIMIT_PER_MINUTE: 600,
      ALLOW_PRIVATE_TARGETS: true,
      WORKER_HEAP_GROWING_PERCENT: 20,
      WORKER_WORKFLOW_TASK_SLOTS: 5,
      API_STARTS_PER_ORGANIZATION: 8,
      TEMPORAL_DEV_SERVER_MEMORY_LIMIT: '128MiB',
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.TEMPORAL_ADDRESS).toBeUndefined();
  });

  it('refuses private webhook targets by default only in production', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).ALLOW_PRIVATE_TARGETS).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', ALLOW_PRIVATE_TARGETS: 'true' }).ALLOW_PRIVATE_TARGETS).toBe(true);
  });

  it("leaves the dev server's memory to Go when told off", () => {
    expect(loadConfig({ TEMPORAL_DEV_SERVER_MEMORY_LIMIT: 'off' }).TEMPORAL_DEV_SERVER_MEMORY_LIMIT).toBeNull();
    expect(loadConfig({ TEMPORAL_DEV_SERVER_MEMORY_LIMIT: '1GiB' }).TEMPORAL_DEV_SERVER_MEMORY_LIMIT).toBe('1GiB');
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT: expected a port number (got "abc")'],
    [{ PORT: '70000' }, 'PORT: expected a port between 0 and 65535 (got "70000")'],
    [{ DATABASE_URL: 'mysql://root@localhost/db' }, 'DATABASE_URL: expected a postgres:// or postgresql:// URL'],
    [{ TEMPORAL_ADDRESS: 'http://temporal:7233' }, 'TEMPORAL_ADDRESS: expected host:port, e.g. localhost:7233'],
    [{ DEMO_API_KEY: 'hunter2' }, 'DEMO_API_KEY: expected sk_sandbox_ followed by at least 32'],
    [{ ALLOW_PRIVATE_TARGETS: 'maybe' }, 'ALLOW_PRIVATE_TARGETS: expected true or false'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent'],
    [{ RATE_LIMIT_PER_MINUTE: '0' }, 'RATE_LIMIT_PER_MINUTE: expected a number above 0'],
    [{ WORKER_HEAP_GROWING_PERCENT: '-5' }, 'WORKER_HEAP_GROWING_PERCENT: expected 0 or more'],
    [{ WORKER_WORKFLOW_TASK_SLOTS: '1' }, 'WORKER_WORKFLOW_TASK_SLOTS: expected 2 or more'],
    [{ TEMPORAL_DEV_SERVER_MEMORY_LIMIT: '128M' }, 'TEMPORAL_DEV_SERVER_MEMORY_LIMIT: expected off or a size such as 128MiB'],
  ])('names the variable and what it accepts: %j', (env, expected) => {
    expect(configError(env)).toContain(expected);
  });

  it('reports every bad variable at once', () => {
    const message = configError({ PORT: 'x', LOG_LEVEL: 'loud' });
    expect(message).toMatch(/^Invalid configuration:\n/);
    expect(message).toContain('PORT');
    expect(message).toContain('LOG_LEVEL');
  });

  it('stops npm start with that message and no stack trace', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'bin/start.ts'], {
      env: { ...process.env, PORT: 'abc', TEMPORAL_ADDRESS: '' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Invalid configuration:\n  PORT: expected a port number (got "abc")');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
