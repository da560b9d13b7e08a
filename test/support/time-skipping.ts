import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter, type Workflow } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';
import { createActivities } from '../../activities';
import type { FocusReader } from '../../activities/subscriptions';
import { type Database, type DatabaseHandle, openDatabase } from '../../platform/database';
import { createLogger } from '../../platform/logger';
import { ensureSearchAttributes } from '../../runtime/temporal';
import { installQuietRuntime } from '../../runtime/worker';

/**
 * Workflows that wait for hours or days, run in seconds, on the run's time-skipping server
 * (./time-skipping-server.ts; the Temporal server's own time skipping fast-forwards a workflow's
 * timers whenever it has no work in flight). The worker runs either the real activities on the run's
 * database (useTimeSkipping) or activities the test hands in, such as the in-memory fakes of
 * ./fake-activities.ts (useTimeSkippingWith), which test a workflow's decisions with no database.
 */

export interface TimeSkippingEnvironment {
  client: Client;
  taskQueue: string;
  /**
   * Starts a workflow whose timers are skipped: its clock runs ahead whenever it only waits. With
   * `timeSkipping: false` it waits in real time, so a test can act during a wait (cancel it, say).
   */
  start<W extends Workflow>(workflow: W, options: { workflowId: string; args: Parameters<W>; timeSkipping?: boolean }): Promise<WorkflowHandle<W>>;
  stop(): Promise<void>;
}

/** The base URL the worker's activities name FHIR resources under (subscription notifications). */
export const TIME_SKIPPING_BASE_URL = 'http://sandbox.test';

/** A client and a worker (the real activities, on `db`) on the run's shared time-skipping server. */
export function timeSkippingEnvironment(db: Database, options: { readFocus?: FocusReader } = {}): Promise<TimeSkippingEnvironment> {
  return timeSkippingEnvironmentWith(
    createActivities({ db, allowPrivateTargets: true, webhookTimeoutMs: 5_000, publicBaseUrl: TIME_SKIPPING_BASE_URL, ...options }),
  );
}

/** A client and a worker running `activities` (the in-memory fakes, say) on the run's shared time-skipping server. */
export async function timeSkippingEnvironmentWith(activities: object): Promise<TimeSkippingEnvironment> {
  const address = inject('timeSkippingAddress');
  const namespace = inject('timeSkippingNamespace');
  const taskQueue = `time-skipping-${randomUUID()}`;
  const connection = await Connection.connect({ address });
  await ensureSearchAttributes(connection, namespace, createLogger('warn', { pretty: false }));
  const client = new Client({ connection, namespace });
  installQuietRuntime();
  const workerConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection: workerConnection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities,
  });
  const running = worker.run();

  return {
    client,
    taskQueue,
    async start(workflow, options) {
      // The SDK's start has no option for time skipping yet, so the request is made directly.
      await connection.workflowService.startWorkflowExecution({
        namespace,
        workflowId: options.workflowId,
        workflowType: { name: workflow.name },
        taskQueue: { name: taskQueue },
        input: { payloads: options.args.map((arg) => defaultPayloadConverter.toPayload(arg)) },
        identity: 'time-skipping test',
        requestId: randomUUID(),
        timeSkippingConfig: { enabled: options.timeSkipping ?? true },
      });
      return client.workflow.getHandle(options.workflowId);
    },
    async stop() {
      worker.shutdown();
      await running;
      await workerConnection.close();
      await connection.close();
    },
  };
}

/** What a test file on the time-skipping server works with, filled in before its tests run. */
export interface TimeSkippingSuite {
  db: Database;
  environment: TimeSkippingEnvironment;
}

/** Opens the run's database and a time-skipping environment on it for the file's tests, and closes both after them. */
export function useTimeSkipping(): TimeSkippingSuite {
  const suite = {} as TimeSkippingSuite;
  let database: DatabaseHandle;
  beforeAll(async () => {
    database = await openDatabase({ databaseUrl: inject('databaseUrl'), dataDir: '.data' });
    suite.db = database.db;
    suite.environment = await timeSkippingEnvironment(database.db);
  });
  afterAll(async () => {
    await suite.environment?.stop();
    await database?.close();
  });
  return suite;
}

/** A time-skipping environment whose worker runs `activities` (no database), for the file's tests. */
export function useTimeSkippingWith<A extends object>(activities: A): { environment: TimeSkippingEnvironment; activities: A } {
  const suite = { activities } as { environment: TimeSkippingEnvironment; activities: A };
  beforeAll(async () => {
    suite.environment = await timeSkippingEnvironmentWith(activities);
  });
  afterAll(async () => {
    await suite.environment?.stop();
  });
  return suite;
}

/** A protobuf duration from a workflow's history (a timer's length, say) in milliseconds. */
export const durationMillis = (duration: temporal.api.history.v1.ITimerStartedEventAttributes['startToFireTimeout']) =>
  Number(duration?.seconds ?? 0) * 1000 + Math.round((duration?.nanos ?? 0) / 1e6);
