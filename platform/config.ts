import { z } from 'zod';
import { DEFAULT_RETRY_SCHEDULE, DEFAULT_RETRY_SCHEDULE_MS, parseRetrySchedule, RETRY_SCHEDULE_PATTERN } from './retry-schedule';
import { API_KEY_PATTERN } from './secrets';
import { trimTrailing } from './text';

/** Well under a worker's activity slots (the SDK's 100 by default), so a few organizations at their bound still leave room. */
export const DEFAULT_DELIVERY_SLOTS_PER_ORGANIZATION = 20;

/** How long an API call to Temporal may take (TEMPORAL_CALL_TIMEOUT_MS): a restart must not hang requests. */
export const DEFAULT_TEMPORAL_CALL_TIMEOUT_MS = 5_000;

/**
 * Workflow runs a worker keeps in memory between tasks (WORKER_MAX_CACHED_WORKFLOWS). Each cached run
 * holds its own context in the workflow thread's V8 heap, so the cache bounds the worker's memory with
 * thousands of deliveries in backoff. 50 holds the 50 deliveries in flight the benchmark drives, at no
 * measured CPU a delivery against 100 (figures: docs/benchmarks.md); an evicted run only replays its short history.
 */
const DEFAULT_WORKER_MAX_CACHED_WORKFLOWS = 50;

/**
 * Workflow starts of one organization in flight at once per API process (API_STARTS_PER_ORGANIZATION);
 * the rest wait their turn, within the call's deadline (platform/workflow-gateway.ts). Issue 32's burst:
 * 50 of one organization's triggers in flight put another organization's start 614 ms behind them;
 * 8 at once still keep the server busy, and no more than 8 wait ahead of another organization's start.
 */
const DEFAULT_API_STARTS_PER_ORGANIZATION = 8;

/**
 * Workflow tasks one worker holds at once (WORKER_WORKFLOW_TASK_SLOTS; the SDK's default is 40). Its
 * one workflow thread runs them one after another, so a task taken beyond what keeps that thread busy
 * only waits inside the worker, in the order it came; left on the server, it waits in the task queue,
 * where fairness serves each organization in turn (docs/api/fair-sharing.md). It halves another
 * organization's latency beside one's burst, at more CPU a delivery: the server keeps the waiting
 * tasks in its backlog (figures: docs/operations/configuration.md). Raise it where throughput matters
 * more than that, or for a server far away (Temporal Cloud), where each task's round trip is long.
 */
const DEFAULT_WORKER_WORKFLOW_TASK_SLOTS = 5;

/**
 * How far V8 lets the heap of a process running a worker grow past what its last full collection
 * kept, in percent (WORKER_HEAP_GROWING_PERCENT; 0 leaves V8's own factor, up to 4×). With thousands
 * of deliveries in backoff most of a worker's heap is garbage not yet collected, which the bound keeps
 * down at no measured CPU cost a delivery (figures: docs/operations/configuration.md, and
 * docs/benchmarks.md, the night's run). The API alone (`start:api`) keeps V8's factor: the bound costs its small reads some latency.
 */
const DEFAULT_WORKER_HEAP_GROWING_PERCENT = 20;

/**
 * The soft memory limit `npm start` gives the Temporal dev server it runs (TEMPORAL_DEV_SERVER_MEMORY_LIMIT,
 * its GOMEMLIMIT). Left to Go, whose heap grows to twice what it last kept before it collects, a server
 * holding 10,000 deliveries in backoff held 490 MiB; with this limit 335 MiB, filled as fast (figures:
 * docs/benchmarks.md, Memory of npm start). Soft: past it Go collects more often (at most half its CPU), never fails.
 */
const DEFAULT_TEMPORAL_DEV_SERVER_MEMORY_LIMIT = '128MiB';

/**
 * Every setting the service reads, validated once at start-up. docs/operations/configuration.md
 * mirrors the descriptions here.
 */
const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const port = z.coerce
  .number({ message: 'expected a port number' })
  .int('expected a whole number')
  .min(0, 'expected a port between 0 and 65535')
  .max(65535, 'expected a port between 0 and 65535');

const postgresUrl = z.string().regex(/^postgres(ql)?:\/\/\S+$/, 'expected a postgres:// or postgresql:// URL');

const httpUrl = z
  .string()
  .url('expected an absolute http(s) URL')
  .regex(/^https?:\/\//, 'expected an absolute http(s) URL')
  .transform((value) => trimTrailing(value, '/'));

const retrySchedule = z
  .string()
  .regex(RETRY_SCHEDULE_PATTERN, `expected comma-separated durations with ms, s, m or h, e.g. ${DEFAULT_RETRY_SCHEDULE}`)
  .transform(parseRetrySchedule);

const wholeNumber = z.coerce.number({ message: 'expected a number' }).int('expected a whole number');
const positiveInt = wholeNumber.positive('expected a number above 0');
const nonNegativeInt = wholeNumber.min(0, 'expected 0 or more');

/** The ignored project folder for tools fetched at run time (the Temporal CLI). */
export const DEFAULT_TOOLS_DIR = '.tools';

const environmentSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test'], { message: 'expected development, production or test' }).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.default(3000),
  PUBLIC_BASE_URL: httpUrl.optional(),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'expected one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
  DATA_DIR: z.string().min(1).default('.data'),
  DATABASE_URL: postgresUrl.optional(),
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^\s:]+:\d+$/, 'expected host:port, e.g. localhost:7233')
    .optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('sandbox'),
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  TEMPORAL_CLI_DOWNLOAD_URL: httpUrl.optional(),
  TOOLS_DIR: z.string().min(1).default(DEFAULT_TOOLS_DIR),
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  /** GOMEMLIMIT of the local dev server (Go's syntax: a number and B, KiB, MiB, GiB or TiB); `off` leaves Go's own, none. */
  TEMPORAL_DEV_SERVER_MEMORY_LIMIT: z
    .string()
    .regex(/^(off|\d+(B|KiB|MiB|GiB|TiB))$/, 'expected off or a size such as 128MiB (B, KiB, MiB, GiB or TiB)')
    .default(DEFAULT_TEMPORAL_DEV_SERVER_MEMORY_LIMIT)
    .transform((value) => (value === 'off' ? null : value)),
  TEMPORAL_CALL_TIMEOUT_MS: positiveInt.default(DEFAULT_TEMPORAL_CALL_TIMEOUT_MS),
  API_STARTS_PER_ORGANIZATION: positiveInt.default(DEFAULT_API_STARTS_PER_ORGANIZATION),
  DEMO_API_KEY: z.string().regex(API_KEY_PATTERN, 'expected sk_sandbox_ followed by at least 32 letters, digits, - or _').optional(),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  /** Per client address, in cost units (api/http/cost-limit.ts): a token exchange costs 10, an authorization 2, most others 1–3. */
  OAUTH_RATE_LIMIT_PER_MINUTE: positiveInt.default(3_000),
  /** Per client address, in cost units: a read costs 1, a search 3. */
  FHIR_RATE_LIMIT_PER_MINUTE: positiveInt.default(6_000),
  /** Failed authentications (any 401, an MLLP message with an unknown token) per client address; past them failing credentials are 429 and valid ones served. */
  FAILED_AUTH_PER_MINUTE: positiveInt.default(300),
  /**
   * HL7 v2 messages per organization, in cost units a minute, for the HTTP inject and for MLLP each
   * (hl7/inject.ts hl7MessageCost: a message costs 1, and 1 more per 16 KiB); past it, 429 or an AR.
   */
  HL7_RATE_LIMIT_PER_MINUTE: positiveInt.default(1_200),
  /** Scenario runs of one organization running at once; past it, 429 until one ends (a manual run expires after a day idle). */
  SCENARIO_RUNS_IN_FLIGHT_PER_ORGANIZATION: positiveInt.default(20),
  /** Aggregator queries of one organization running at once; past it, 429 until one ends. */
  AGGREGATOR_QUERIES_IN_FLIGHT_PER_ORGANIZATION: positiveInt.default(10),
  /** Bulk exports of one organization running at once; past it, 429 until one ends (docs/api/bulk-data.md). */
  BULK_EXPORTS_IN_FLIGHT_PER_ORGANIZATION: positiveInt.default(5),
  /** Bulk exports one organization keeps (running or with files); past it, 429 until one expires or is deleted. */
  BULK_EXPORTS_KEPT_PER_ORGANIZATION: positiveInt.default(20),
  /** Hours an export's files are kept once it ends; then the retention Schedule deletes them. */
  BULK_EXPORT_FILE_HOURS: positiveInt.default(24),
  ALLOW_PRIVATE_TARGETS: booleanFlag.optional(),
  SHUTDOWN_GRACE_SECONDS: positiveInt.default(25),
  WORKER_MAX_CACHED_WORKFLOWS: nonNegativeInt.default(DEFAULT_WORKER_MAX_CACHED_WORKFLOWS),
  /** At least 2: the SDK refuses fewer while it caches workflow runs. */
  WORKER_WORKFLOW_TASK_SLOTS: wholeNumber.min(2, 'expected 2 or more').default(DEFAULT_WORKER_WORKFLOW_TASK_SLOTS),
  WORKER_HEAP_GROWING_PERCENT: nonNegativeInt.default(DEFAULT_WORKER_HEAP_GROWING_PERCENT),
  WEBHOOK_RETRY_SCHEDULE: retrySchedule.default(DEFAULT_RETRY_SCHEDULE_MS as number[]),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(15_000),
  /** Activities one worker runs at once (the SDK's default); webhook attempts share them. */
  WORKER_MAX_CONCURRENT_ACTIVITIES: positiveInt.default(100),
  /** Webhook attempts of one organization at once per worker: a receiver that never answers holds this many activity slots, not all. */
  DELIVERY_SLOTS_PER_ORGANIZATION: positiveInt.default(DEFAULT_DELIVERY_SLOTS_PER_ORGANIZATION),
  DELIVERY_RETENTION_DAYS: positiveInt.default(30),
  /** The most a delivery's envelope is kept from its arrival, however often it is replayed (a replay restarts DELIVERY_RETENTION_DAYS, never this). */
  DELIVERY_MAX_RETENTION_DAYS: positiveInt.default(90),
  RELAY_PORT: port.default(3004),
  HL7_MLLP_PORT: z.union([z.enum(['off', '0']).transform(() => null), port]).default(2575),
  /** The MLLP listener listens on loopback unless told otherwise (issue 23): it is reached through a tunnel or a configured address. */
  HL7_MLLP_HOST: z.string().min(1).default('127.0.0.1'),
  HL7_MLLP_MAX_CONNECTIONS: positiveInt.default(200),
  HL7_MLLP_MAX_CONNECTIONS_PER_ADDRESS: positiveInt.default(20),
  RELAY_FORWARD_URL: httpUrl.optional(),
  RELAY_WEBHOOK_SECRETS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((secret) => secret.trim())
        .filter(Boolean),
    )
    .optional(),
  SMART_AUTHORIZATION_CODE_SECONDS: positiveInt.default(60),
  SMART_LAUNCH_SECONDS: positiveInt.default(300),
  SMART_ACCESS_TOKEN_SECONDS: positiveInt.default(3600),
  SMART_REFRESH_TOKEN_SECONDS: positiveInt.default(30 * 24 * 3600),
});

export type Config = ReturnType<typeof loadConfig>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment; a bad value throws a ConfigError naming the variable and what it accepts. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = environmentSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? 'environment');
      const got = present[name];
      return `  ${name}: ${issue.message}${got === undefined ? '' : ` (got ${JSON.stringify(got)})`}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const values = parsed.data;
  return {
    ...values,
    PUBLIC_BASE_URL: values.PUBLIC_BASE_URL ?? `http://localhost:${values.PORT}`,
    // Local development needs localhost receivers; anything else must opt in.
    ALLOW_PRIVATE_TARGETS: values.ALLOW_PRIVATE_TARGETS ?? values.NODE_ENV !== 'production',
  };
}
