import { readdirSync, readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

/**
 * What one workflow costs the engine, read from its history, and what a process costs the machine,
 * read from the kernel: the per-delivery counts `npm run bench:deliveries` prints and
 * docs/operations/capacity-plan.md is computed from.
 */

const { EventType } = proto.temporal.api.enums.v1;
const { History } = proto.temporal.api.history.v1;

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** Counts for one workflow run; summed over runs, then divided by the number of items. */
export interface HistoryCounts {
  events: number;
  workflowTasks: number;
  activityTasks: number;
  /** Activity attempts that failed or timed out: each retry's predecessor, and a last attempt that failed. */
  activityFailures: number;
  localActivityTasks: number;
  timers: number;
  signalsAndUpdates: number;
  searchAttributeUpserts: number;
  childWorkflows: number;
  /** Temporal Cloud's billed actions, as its pricing page defines them, that a history shows (heartbeats it does not). */
  actions: number;
  historyBytes: number;
  payloadBytes: number;
}

const ZERO: HistoryCounts = {
  events: 0,
  workflowTasks: 0,
  activityTasks: 0,
  activityFailures: 0,
  localActivityTasks: 0,
  timers: 0,
  signalsAndUpdates: 0,
  searchAttributeUpserts: 0,
  childWorkflows: 0,
  actions: 0,
  historyBytes: 0,
  payloadBytes: 0,
};

/** Bytes of every Payload (data and metadata) anywhere in an event. */
function payloadBytes(value: unknown): number {
  if (!value || typeof value !== 'object') return 0;
  if (value instanceof Uint8Array) return 0;
  const candidate = value as { data?: unknown; metadata?: unknown };
  if (candidate.data instanceof Uint8Array && candidate.metadata && typeof candidate.metadata === 'object') {
    const metadata = Object.values(candidate.metadata as Record<string, Uint8Array>).reduce((sum, bytes) => sum + (bytes?.byteLength ?? 0), 0);
    return candidate.data.byteLength + metadata;
  }
  return Object.values(value).reduce((sum: number, child) => sum + payloadBytes(child), 0);
}

/**
 * Counts one history. Actions (docs.temporal.io/cloud/actions): the start, each activity scheduled
 * and each retry of it, each timer (a `condition` with a timeout starts one), each signal and
 * Update, each search-attribute upsert, and the local activities of one workflow task together as
 * one. Not counted here because no event shows them: heartbeats that reach the server, queries.
 */
export function countHistory(events: HistoryEvent[]): HistoryCounts {
  const counts = { ...ZERO, events: events.length };
  counts.historyBytes = History.encode({ events }).finish().byteLength;
  const localActivityTasks = new Set<string>();
  for (const event of events) {
    counts.payloadBytes += payloadBytes(event);
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        counts.actions += 1;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        counts.workflowTasks += 1;
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const attempt = event.activityTaskStartedEventAttributes?.attempt ?? 1;
        counts.activityTasks += attempt;
        counts.activityFailures += attempt - 1;
        counts.actions += attempt;
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
        counts.activityFailures += 1;
        break;
      case EventType.EVENT_TYPE_TIMER_STARTED:
        counts.timers += 1;
        counts.actions += 1;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        counts.signalsAndUpdates += 1;
        counts.actions += 1;
        break;
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const fields = Object.keys(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {});
        // The versioning attribute a patch sets is not billed.
        if (fields.some((field) => field !== 'TemporalChangeVersion')) {
          counts.searchAttributeUpserts += 1;
          counts.actions += 1;
        }
        break;
      }
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        // Billed as the child's start, which its own history counts.
        counts.childWorkflows += 1;
        break;
      case EventType.EVENT_TYPE_MARKER_RECORDED: {
        const marker = event.markerRecordedEventAttributes;
        if (marker?.markerName === 'core_local_activity') {
          counts.localActivityTasks += 1;
          localActivityTasks.add(String(marker.workflowTaskCompletedEventId));
        }
        break;
      }
    }
  }
  counts.actions += localActivityTasks.size;
  return counts;
}

export function addCounts(a: HistoryCounts, b: HistoryCounts): HistoryCounts {
  return Object.fromEntries(
    Object.keys(ZERO).map((key) => [key, a[key as keyof HistoryCounts] + b[key as keyof HistoryCounts]]),
  ) as unknown as HistoryCounts;
}

/** The summed counts of these workflows' histories. */
export async function countWorkflows(client: Client, workflowIds: string[]): Promise<HistoryCounts> {
  let total = { ...ZERO };
  for (const workflowId of workflowIds) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    total = addCounts(total, countHistory(history.events ?? []));
  }
  return total;
}

/** One line of counts per item (`per` of them in `counts`), e.g. per delivery. */
export function formatCounts(counts: HistoryCounts, per: number): string {
  const each = (value: number) => (value / per).toFixed(value % per === 0 ? 0 : 1);
  return [
    `${each(counts.actions)} actions`,
    `${each(counts.events)} events`,
    `${each(counts.workflowTasks)} workflow tasks`,
    `${each(counts.activityTasks)} activity tasks (${each(counts.activityFailures)} failed)`,
    `${each(counts.localActivityTasks)} local activities`,
    `${each(counts.timers)} timers`,
    `${each(counts.signalsAndUpdates)} signals/updates`,
    `${each(counts.searchAttributeUpserts)} search-attribute upserts`,
    `${each(counts.childWorkflows)} child starts`,
    `history ${(counts.historyBytes / per).toFixed(0)} B (payloads ${(counts.payloadBytes / per).toFixed(0)} B)`,
  ].join(', ');
}

/** Statements sent to Postgres through one database handle (platform/database.ts `onStatement`), and how many write. */
export function statementCounter() {
  const counts = { statements: 0, writes: 0 };
  return {
    onStatement(statement: string) {
      counts.statements += 1;
      if (/\b(insert|update|delete)\b/i.test(statement.slice(0, 400))) counts.writes += 1;
    },
    snapshot: () => ({ ...counts }),
  };
}

export type StatementCounts = ReturnType<ReturnType<typeof statementCounter>['snapshot']>;

export function statementsSince(counter: ReturnType<typeof statementCounter>, before: StatementCounts): StatementCounts {
  const now = counter.snapshot();
  return { statements: now.statements - before.statements, writes: now.writes - before.writes };
}

const TICKS_PER_MS = 100 / 1000; // USER_HZ, 100 on Linux

/** Busy CPU of the whole machine (/proc/stat), in ms: all but idle and iowait. */
export function machineBusyMs(): number {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  return fields.slice(0, 8).reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value!), 0) / TICKS_PER_MS;
}

/** This process's main thread's user + system CPU (/proc/self/task/<pid>/stat), in ms: the event loop alone, without worker threads or the GC's helpers. */
export function mainThreadBusyMs(): number {
  return busyMs(`/proc/self/task/${process.pid}/stat`);
}

/** A process's user + system CPU (/proc/<pid>/stat), in ms; 0 once it is gone. */
export function processBusyMs(pid: number): number {
  return busyMs(`/proc/${pid}/stat`);
}

function busyMs(statFile: string): number {
  try {
    const fields = readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_MS;
  } catch {
    return 0;
  }
}

/** Every Postgres server process on this machine (the postmaster and its backends): the database's share of the CPU. */
export function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/**
 * CPU since `start()` for named groups of processes plus the machine. Postgres backends come and
 * go, so their group is read afresh at each end: one that exited meanwhile is not counted.
 */
export function cpuMeter(groups: () => Record<string, number[]>) {
  const sample = () => {
    const byGroup = Object.fromEntries(Object.entries(groups()).map(([name, pids]) => [name, new Map(pids.map((pid) => [pid, processBusyMs(pid)]))]));
    return { machine: machineBusyMs(), byGroup };
  };
  return {
    start() {
      const before = sample();
      return () => {
        const after = sample();
        const spent: Record<string, number> = { machine: after.machine - before.machine };
        for (const [name, pids] of Object.entries(after.byGroup)) {
          let sum = 0;
          for (const [pid, ms] of pids) sum += ms - (before.byGroup[name]?.get(pid) ?? ms);
          spent[name] = sum;
        }
        return spent;
      };
    },
  };
}

/** The CPU of every measured process together (the machine's total aside), in ms. */
export function measuredMs(spent: Record<string, number>): number {
  return Object.entries(spent).reduce((sum, [name, ms]) => (name === 'machine' ? sum : sum + ms), 0);
}

/** CPU per item, in ms: ours (every group together) and each group's, then the machine's, which includes other work on it. */
export function formatCpu(spent: Record<string, number>, items: number): string {
  const each = (ms: number) => (ms / items).toFixed(1);
  const groups = Object.entries(spent).filter(([name]) => name !== 'machine');
  const ours = groups.reduce((sum, [, ms]) => sum + ms, 0);
  return `${each(ours)} ms (${groups.map(([name, ms]) => `${name} ${each(ms)}`).join(', ')}); whole machine ${each(spent.machine!)} ms`;
}

/**
 * Requests Temporal's services made to their database for namespace `default`, by operation, summed
 * over the servers' Prometheus endpoints (a cluster's `metricsUrl`s): what sizes Temporal's own Postgres.
 */
export async function persistenceRequests(metricsUrls: string[]): Promise<Map<string, number>> {
  const byOperation = new Map<string, number>();
  for (const url of metricsUrls) {
    const text = await (await fetch(url)).text();
    for (const match of text.matchAll(/^persistence_requests\{([^}]*)\} (\S+)$/gm)) {
      const labels = match[1]!;
      if (!labels.includes('namespace="default"')) continue;
      const operation = /operation="([^"]+)"/.exec(labels)?.[1] ?? 'unknown';
      byOperation.set(operation, (byOperation.get(operation) ?? 0) + Number(match[2]));
    }
  }
  return byOperation;
}

/** Each operation's requests between two readings, per item, largest first. */
export function formatPersistence(before: Map<string, number>, after: Map<string, number>, items: number): string {
  const spent = [...after]
    .map(([operation, count]) => [operation, (count - (before.get(operation) ?? 0)) / items] as const)
    .filter(([, each]) => each > 0);
  const total = spent.reduce((sum, [, each]) => sum + each, 0);
  return `${total.toFixed(1)} (${spent
    .sort((a, b) => b[1] - a[1])
    .map(([operation, each]) => `${operation} ${each.toFixed(1)}`)
    .join(', ')})`;
}
