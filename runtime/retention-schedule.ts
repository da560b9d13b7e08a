import { type Client, ScheduleAlreadyRunning, type ScheduleOptionsStartWorkflowAction } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../platform/config';
import { RETENTION_INTERVAL, retentionScheduleId } from '../workflows/retention/contract';
import { retentionWorkflow } from '../workflows/retention/workflow';

/**
 * Creates the retention Schedule, or brings an existing one up to date (interval, input), so every
 * worker process can call it at start: Temporal runs the purge (CONVENTIONS.md, Runtime shape: the
 * only scheduler), visible under Schedules in the Web UI, and skips a run while the last one is busy.
 */
export async function ensureRetentionSchedule(
  client: Client,
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'DELIVERY_RETENTION_DAYS' | 'DELIVERY_MAX_RETENTION_DAYS'>,
  logger: Logger,
): Promise<string> {
  const scheduleId = retentionScheduleId(config.TEMPORAL_TASK_QUEUE);
  const spec = { intervals: [{ every: RETENTION_INTERVAL }] };
  const action: ScheduleOptionsStartWorkflowAction<typeof retentionWorkflow> = {
    type: 'startWorkflow',
    workflowType: retentionWorkflow,
    workflowId: scheduleId,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    args: [{ deliveryRetentionDays: config.DELIVERY_RETENTION_DAYS, deliveryMaxRetentionDays: config.DELIVERY_MAX_RETENTION_DAYS }],
  };
  const policies = { overlap: 'SKIP' as const, catchupWindow: RETENTION_INTERVAL };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
    logger.info(`Created the retention Schedule "${scheduleId}" (every ${RETENTION_INTERVAL})`);
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action, policies }));
  }
  return scheduleId;
}
