import { inspect } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities } from '../activities';
import type { Config } from '../platform/config';
import type { Database } from '../platform/database';
import { scrubText, serializeError } from '../platform/logger';
import type { ResolveHost } from '../webhooks/targets';
import { createActivitySlots } from './activity-slots';
import { workflowBundle } from './workflow-bundle';

let runtimeInstalled = false;

/** The SDK's own defaults for the other slots a tuner must name (worker-options.js), kept as they were. */
const SDK_LOCAL_ACTIVITY_SLOTS = 100;
const SDK_NEXUS_TASK_SLOTS = 100;

/** The SDK's own logs are noisy at INFO; ours go through pino. Installed once per process. */
export function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({
    logger: new DefaultLogger('WARN', ({ level, timestampNanos, message, meta }) => {
      // The SDK's own format, its errors through our serializer: a failed query's bound values never reach the log.
      const scrubbed = meta && Object.fromEntries(Object.entries(meta).map(([key, value]) => [key, serializeError(value)]));
      const at = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
      process.stderr.write(`${at} [${level}] ${scrubText(message)}${scrubbed ? ` ${inspect(scrubbed, { depth: 6 })}` : ''}\n`);
    }),
  });
  runtimeInstalled = true;
}

export interface WorkerOptions {
  address: string;
  config: Config;
  db: Database;
  /** A prebuilt bundle (tests share one); otherwise the one kept in DATA_DIR for these sources, built first if missing (runtime/workflow-bundle.ts). */
  workflowBundle?: WorkflowBundleOption;
  /** The DNS lookup for webhook targets; tests hand in their own, production uses the system's. */
  resolveHost?: ResolveHost;
  /** Where activities report housekeeping (retention counts). */
  logger?: Logger;
}

export interface RunningWorker {
  worker: Worker;
  /** Settles when the worker has stopped polling and finished its in-flight tasks. */
  done: Promise<void>;
  /** Stops polling, lets running activities finish (up to the grace time), then closes the connection. */
  stop(): Promise<void>;
}

/**
 * Bounds how far V8 grows this process's heaps past what each full collection kept (see
 * WORKER_HEAP_GROWING_PERCENT): a worker's garbage is mostly short-lived, and left to V8 the heap of
 * a process holding thousands of waiting deliveries grows towards its limit before it is collected.
 * The flag is the whole process's, the workflow thread included; V8 reads it at every collection.
 */
export function boundHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  installQuietRuntime();
  boundHeapGrowth(options.config.WORKER_HEAP_GROWING_PERCENT);
  const connection = await NativeConnection.connect({ address: options.address });
  const { config } = options;
  const activitySlots = createActivitySlots(config.WORKER_MAX_CONCURRENT_ACTIVITIES);
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({
      db: options.db,
      allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS,
      webhookTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
      deliverySlotsPerOrganization: config.DELIVERY_SLOTS_PER_ORGANIZATION,
      lendWorkerSlot: activitySlots.lend,
      resolveHost: options.resolveHost,
      logger: options.logger,
      publicBaseUrl: config.PUBLIC_BASE_URL,
    }),
    workflowBundle: options.workflowBundle ?? (await workflowBundle(config.DATA_DIR)),
    shutdownGraceTime: `${config.SHUTDOWN_GRACE_SECONDS} seconds`,
    // Deliveries wait in backoff for minutes; keeping each one cached would cost memory per waiting
    // delivery. Evicted runs replay their short history when their timer fires.
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    // Fixed slots: workflow tasks as few as WORKER_WORKFLOW_TASK_SLOTS (platform/config.ts says why),
    // activities as many as the SDK's default, whose slots a waiting delivery attempt lends to the next
    // task (runtime/activity-slots.ts), and the SDK's defaults for the rest.
    tuner: {
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: config.WORKER_WORKFLOW_TASK_SLOTS },
      activityTaskSlotSupplier: activitySlots.supplier,
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: SDK_LOCAL_ACTIVITY_SLOTS },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: SDK_NEXUS_TASK_SLOTS },
    },
    // A workflow task waits this long for the worker that ran the workflow last before any worker may
    // take it (default 10 s): a worker that died must not hold its deliveries' next step for long.
    stickyQueueScheduleToStartTimeout: '3 seconds',
  });
  const done = worker.run().finally(() => connection.close());
  return {
    worker,
    done,
    stop: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
