import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Express } from 'express';
import type { Logger } from 'pino';
import { inject } from 'vitest';
import { type FhirStore, loadFhirStore } from '../../fixtures/store';
import { type Config, loadConfig } from '../../platform/config';
import { type DatabaseHandle, openDatabase } from '../../platform/database';
import { createLogger } from '../../platform/logger';
import { createOrganization, issueApiKey } from '../../platform/organizations';
import { startProcess } from '../../runtime/process';
import { connectTemporal } from '../../runtime/temporal';
import type { RunningWorker } from '../../runtime/worker';
import type { ResolveHost } from '../../webhooks/targets';
import { freePort } from './ports';

export interface TestService {
  baseUrl: string;
  config: Config;
  database: DatabaseHandle;
  temporal: Client;
  /** The port of the service's own MLLP listener (HL7_MLLP_PORT, a free one unless the test sets it). */
  mllpPort: number | null;
  taskQueue: string;
  fhirStore: FhirStore;
  /** The Express app the service listens with (its router lists every route it answers). */
  app: Express;
  /** A new organization with an active key: each test gets its own tenant. */
  newTenant(name?: string): Promise<{ organizationId: string; key: string; keyId: string }>;
  /** Stops this service's worker (in-flight activities finish); workflows wait in Temporal meanwhile. */
  stopWorker(): Promise<void>;
  /** Starts a fresh worker on the same task queue. */
  startWorker(): Promise<void>;
  /** A request with the given API key; the JSON body is parsed when there is one. */
  call(path: string, options?: CallOptions): Promise<CallResult>;
  stop(): Promise<void>;
}

export interface CallOptions {
  key?: string | undefined;
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Headers;
  // Tests read whatever the API answered; assertions give it shape.
  body: any;
}

/**
 * The API and a worker in this process, against the run's shared Postgres database and Temporal
 * server, on a task queue of their own so test files never take each other's tasks. The port is
 * chosen first so PUBLIC_BASE_URL (SMART discovery, the FHIR base) is the address tests call.
 */
export interface TestServiceOptions {
  /** The DNS lookup the API and the worker check webhook targets with (no test resolves names off this machine). */
  resolveHost?: ResolveHost;
  /** Where the API and the worker log (tests that read the logs); silent unless LOG_LEVEL says otherwise. */
  logger?: Logger;
}

export async function startTestService(environment: Record<string, string> = {}, options: TestServiceOptions = {}): Promise<TestService> {
  const taskQueue = `test-${randomUUID()}`;
  const port = await freePort();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: String(port),
    HL7_MLLP_PORT: String(await freePort()),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    HOST: '127.0.0.1',
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    SHUTDOWN_GRACE_SECONDS: '5',
    ...environment,
  });
  const logger = options.logger ?? createLogger(process.env.LOG_LEVEL ?? 'silent', { pretty: false });
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
  const temporal = await connectTemporal(config.TEMPORAL_ADDRESS!, config.TEMPORAL_NAMESPACE);
  const fhirStore = loadFhirStore();
  // The same process `npm start` composes (runtime/process.ts): API, MLLP listener, worker, retention Schedule.
  const running = await startProcess({
    config,
    logger,
    database,
    temporal,
    temporalAddress: config.TEMPORAL_ADDRESS!,
    roles: { api: true, worker: true },
    fhirStore,
    resolveHost: options.resolveHost,
    workflowBundle: { codePath: inject('workflowBundlePath') },
  });
  let worker: RunningWorker | null = running.worker;
  const server = running.server!;
  const app = running.app!;
  const baseUrl = `http://127.0.0.1:${server.port}`;

  return {
    baseUrl,
    config,
    database,
    mllpPort: running.mllp?.port ?? null,
    temporal: temporal.client,
    taskQueue,
    fhirStore,
    app,
    async newTenant(name = 'Test Health (synthetic)') {
      const organization = await createOrganization(database.db, { name });
      const issued = await issueApiKey(database.db, organization.id);
      return { organizationId: organization.id, key: issued.key, keyId: issued.id };
    },
    call: (path, options) => call(baseUrl, path, options),
    async stopWorker() {
      await worker?.stop();
      worker = null;
    },
    async startWorker() {
      worker ??= await running.startWorker();
    },
    async stop() {
      await running.mllp?.close();
      await server.close();
      await worker?.stop();
      await temporal.connection.close();
      await database.close();
    },
  };
}

export async function call(baseUrl: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const method = options.method ?? 'GET';
  // A test that kept this process busy (validating a large resource, say) past the server's keep-alive
  // has left fetch an idle socket the server has closed; one turn of the event loop lets fetch's own
  // idle timer retire it, so even a POST, which is not sent twice, goes out on a live socket.
  await new Promise((resolve) => setTimeout(resolve, 0));
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  } catch (error) {
    // A test that keeps this process busy past the server's keep-alive timeout leaves fetch a pooled
    // socket the server has just closed; a read is safe to send again on a fresh one.
    if (method !== 'GET' || (error as { cause?: { code?: string } }).cause?.code !== 'ECONNRESET') throw error;
    response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  }
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  return { status: response.status, headers: response.headers, body: contentType.includes('json') && text ? JSON.parse(text) : text };
}
