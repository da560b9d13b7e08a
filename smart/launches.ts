import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import { smartLaunches } from '../drizzle/schema';
import type { Database } from '../platform/database';
import { digest, newOpaqueToken } from './opaque-token';

export interface LaunchContext {
  patientId: string;
  encounterId: string | null;
}

/** An EHR launch handle: opaque, for one client, one authorization, and a few minutes. */
export async function createLaunch(
  db: Database,
  input: LaunchContext & { clientId: string; lifetimeSeconds: number },
): Promise<{ handle: string; expiresAt: Date }> {
  const now = new Date();
  await db.delete(smartLaunches).where(and(eq(smartLaunches.clientId, input.clientId), lt(smartLaunches.expiresAt, now)));
  const handle = newOpaqueToken();
  const expiresAt = new Date(now.getTime() + input.lifetimeSeconds * 1000);
  await db.insert(smartLaunches).values({
    handleHash: digest(handle),
    clientId: input.clientId,
    patientId: input.patientId,
    encounterId: input.encounterId,
    expiresAt,
  });
  return { handle, expiresAt };
}

/** Spends a launch handle; null when it is unknown, another client's, already used or expired. */
export async function consumeLaunch(db: Database, handle: string, clientId: string): Promise<LaunchContext | null> {
  const [launch] = await db
    .update(smartLaunches)
    .set({ usedAt: new Date() })
    .where(
      and(
        eq(smartLaunches.handleHash, digest(handle)),
        eq(smartLaunches.clientId, clientId),
        isNull(smartLaunches.usedAt),
        gt(smartLaunches.expiresAt, new Date()),
      ),
    )
    .returning({ patientId: smartLaunches.patientId, encounterId: smartLaunches.encounterId });
  return launch ?? null;
}
