import { deliveries } from '../drizzle/schema';
import type { Database } from '../platform/database';

/** A delivery as the trigger creates it; also the delivery workflow's input, so either side can record it. */
export interface NewDelivery {
  id: string;
  organizationId: string;
  connectionId: string | null;
  scenarioId: string | null;
  event: string;
  environment: string;
  envelopeBody: string;
  createdAt: string;
}

/**
 * Records a new delivery once, whoever comes first: the API after starting the workflow, or the
 * workflow's first step. Starting the workflow before the row exists means a crash in between can
 * never leave a delivery that looks accepted but has no workflow.
 */
export async function recordNewDelivery(db: Database, delivery: NewDelivery): Promise<void> {
  const createdAt = new Date(delivery.createdAt);
  await db
    .insert(deliveries)
    .values({ ...delivery, status: 'pending', createdAt, updatedAt: createdAt })
    .onConflictDoNothing();
}
