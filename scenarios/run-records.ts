import { and, count, desc, eq, lt } from 'drizzle-orm';
import { type ScenarioRun, scenarioRuns } from '../drizzle/schema';
import type { Database } from '../platform/database';
import type { NewScenarioRun, ScenarioProgress } from './run';
import type { ScenarioRunStatus } from './vocabulary';

/** The one module that writes `scenario_runs`: a run as its workflow and the API record it, and its progress. */

/**
 * Records a new run once, whoever comes first: the API after starting the workflow, or the
 * workflow's first step. Starting the workflow first means a crash in between never leaves a run
 * that looks accepted but has no workflow.
 */
export async function recordNewRun(db: Database, run: NewScenarioRun): Promise<void> {
  await db.insert(scenarioRuns).values(pendingRun(run)).onConflictDoNothing();
}

/** A new run as its row reads before its first step: also how a 202 shows it when the row cannot be read. */
export function pendingRun(run: NewScenarioRun): ScenarioRun {
  const createdAt = new Date(run.createdAt);
  return { ...run, status: run.progress.status, simulatedStart: new Date(run.simulatedStart), createdAt, updatedAt: createdAt };
}

export async function recordRunProgress(db: Database, runId: string, progress: ScenarioProgress): Promise<void> {
  await db.update(scenarioRuns).set({ status: progress.status, progress, updatedAt: new Date() }).where(eq(scenarioRuns.id, runId));
}

export async function findRun(db: Database, runId: string): Promise<ScenarioRun | undefined> {
  const [run] = await db.select().from(scenarioRuns).where(eq(scenarioRuns.id, runId));
  return run;
}

/** The organization's run with this id, or undefined (another organization's is not found either). */
export async function findOwnedRun(db: Database, organizationId: string, runId: string): Promise<ScenarioRun | undefined> {
  const [run] = await db
    .select()
    .from(scenarioRuns)
    .where(and(eq(scenarioRuns.organizationId, organizationId), eq(scenarioRuns.id, runId)));
  return run;
}

/** How many of the organization's runs are still running (its in-flight bound counts them). */
export async function runningRuns(db: Database, organizationId: string): Promise<number> {
  const [row] = await db
    .select({ running: count() })
    .from(scenarioRuns)
    .where(and(eq(scenarioRuns.organizationId, organizationId), eq(scenarioRuns.status, 'running')));
  return row?.running ?? 0;
}

export interface RunFilter {
  /** Only ids before this one (the page cursor); ids sort by creation time. */
  before?: string | undefined;
  scenarioId?: string | undefined;
  status?: ScenarioRunStatus | undefined;
}

/** Newest first, at most `limit` rows. */
export async function listRuns(db: Database, organizationId: string, filter: RunFilter, limit: number): Promise<ScenarioRun[]> {
  return db
    .select()
    .from(scenarioRuns)
    .where(
      and(
        eq(scenarioRuns.organizationId, organizationId),
        filter.before ? lt(scenarioRuns.id, filter.before) : undefined,
        filter.scenarioId ? eq(scenarioRuns.scenarioId, filter.scenarioId) : undefined,
        filter.status ? eq(scenarioRuns.status, filter.status) : undefined,
      ),
    )
    .orderBy(desc(scenarioRuns.id))
    .limit(limit);
}
