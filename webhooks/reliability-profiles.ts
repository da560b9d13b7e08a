import { eq } from 'drizzle-orm';
import { reliabilityProfiles } from '../drizzle/schema';
import type { Database } from '../platform/database';
import { DEFAULT_RELIABILITY_PROFILE, type ReliabilityProfile, reliabilityProfileSchema } from './chaos';

/**
 * The one module that writes `reliability_profiles`: each organization's chaos profile (webhooks/chaos.ts),
 * the default (every mode off) until it sets one. The delivery attempt reads it in its own query
 * (webhooks/delivery-records.ts, attemptContext).
 */
export async function loadReliabilityProfile(db: Database, organizationId: string): Promise<{ profile: ReliabilityProfile; updatedAt: Date | null }> {
  const [row] = await db.select().from(reliabilityProfiles).where(eq(reliabilityProfiles.organizationId, organizationId));
  return row
    ? { profile: reliabilityProfileSchema.parse(row.profile), updatedAt: row.updatedAt }
    : { profile: DEFAULT_RELIABILITY_PROFILE, updatedAt: null };
}

export async function saveReliabilityProfile(db: Database, organizationId: string, profile: ReliabilityProfile): Promise<Date> {
  const updatedAt = new Date();
  await db
    .insert(reliabilityProfiles)
    .values({ organizationId, profile, updatedAt })
    .onConflictDoUpdate({ target: reliabilityProfiles.organizationId, set: { profile, updatedAt } });
  return updatedAt;
}
