import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRetentionActivities } from '../../activities/retention';
import { deliveries, stagedEnvelopes } from '../../drizzle/schema';
import { type DatabaseHandle, openDatabase } from '../../platform/database';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { isStaged, STAGE_ENVELOPES_OVER_BYTES } from '../../webhooks/claim-check';
import { checkIn, recordNewDelivery } from '../../webhooks/delivery-records';
import type { NewDelivery } from '../../webhooks/new-delivery';

/**
 * The claim check's bookkeeping against the real database: a large envelope is staged once, moves
 * into the delivery row whoever records it first (the API from its own copy, or the workflow from
 * the claim check), is never left behind once the row exists, and a claim check with nothing behind
 * it is an error rather than a delivery silently never recorded.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

let database: DatabaseHandle;
let organizationId: string;
beforeAll(async () => {
  database = await openDatabase({ databaseUrl: inject('databaseUrl'), dataDir: '.data' });
  organizationId = (await createOrganization(database.db, { name: 'Claim check (synthetic)' })).id;
});
afterAll(() => database?.close());

function newDelivery(envelopeBytes: number): NewDelivery {
  const id = newId('dlv');
  const head = JSON.stringify({ id: newId('evt'), event: 'results.report.final', note: 'synthetic' });
  return {
    id,
    organizationId,
    connectionId: null,
    scenarioId: null,
    event: 'results.report.final',
    environment: 'sandbox',
    // Non-ASCII on purpose: the threshold counts UTF-8 bytes.
    envelopeBody: `${head.slice(0, -1)},"padding":"${'é'.repeat(Math.max(0, (envelopeBytes - head.length - 14) / 2))}"}`,
    createdAt: new Date().toISOString(),
    hl7ControlId: 'SYN-CC-1',
  };
}

const stagedOf = (id: string) => database.db.select().from(stagedEnvelopes).where(eq(stagedEnvelopes.deliveryId, id));
const recordedOf = async (id: string) => (await database.db.select().from(deliveries).where(eq(deliveries.id, id)))[0];

describe('claim checks', () => {
  it('stages a small envelope too: what a partner sent never rides in a workflow input (docs/api/privacy.md)', async () => {
    const delivery = newDelivery(2 * 1024);
    const carried = await checkIn(database.db, delivery);
    expect(isStaged(carried)).toBe(true);
    expect(carried).not.toHaveProperty('envelopeBody');
    expect((await stagedOf(delivery.id))[0]?.envelopeBody).toBe(delivery.envelopeBody);
    await recordNewDelivery(database.db, carried);
    expect((await recordedOf(delivery.id))?.envelopeBody).toBe(delivery.envelopeBody);
    expect(await stagedOf(delivery.id)).toEqual([]);
  });

  it('stages a larger one, and the workflow recording from the claim check moves it into the row, once', async () => {
    const delivery = newDelivery(STAGE_ENVELOPES_OVER_BYTES + 1024);
    const carried = await checkIn(database.db, delivery);
    expect(isStaged(carried)).toBe(true);
    expect(carried).not.toHaveProperty('envelopeBody');
    expect(JSON.stringify(carried).length).toBeLessThan(1024);
    expect((await stagedOf(delivery.id)).map((row) => row.envelopeBody)).toEqual([delivery.envelopeBody]);

    await recordNewDelivery(database.db, carried);
    expect(await recordedOf(delivery.id)).toMatchObject({ envelopeBody: delivery.envelopeBody, status: 'pending', hl7ControlId: 'SYN-CC-1' });
    expect(await stagedOf(delivery.id)).toEqual([]);
    // The activity retried after recording: the row is there, nothing to move, no error.
    await recordNewDelivery(database.db, carried);
    expect((await recordedOf(delivery.id))!.envelopeBody).toBe(delivery.envelopeBody);
  });

  it('drops the staged copy when the API records the delivery first from its own, and the workflow then finds the row', async () => {
    const delivery = newDelivery(STAGE_ENVELOPES_OVER_BYTES * 2);
    const carried = await checkIn(database.db, delivery);
    await recordNewDelivery(database.db, delivery);
    expect(await stagedOf(delivery.id)).toEqual([]);
    await recordNewDelivery(database.db, carried);
    expect((await recordedOf(delivery.id))!.envelopeBody).toBe(delivery.envelopeBody);
    // A retried request after that stages nothing again: nobody would take it.
    await checkIn(database.db, delivery);
    expect(await stagedOf(delivery.id)).toEqual([]);
  });

  it('records a control id that decoded to a NUL as the inline path does (U+FFFD), with the envelope kept byte for byte', async () => {
    const delivery = { ...newDelivery(STAGE_ENVELOPES_OVER_BYTES * 2), hl7ControlId: 'SYN\u0000CC' };
    await recordNewDelivery(database.db, await checkIn(database.db, delivery));
    expect(await recordedOf(delivery.id)).toMatchObject({ hl7ControlId: 'SYN\uFFFDCC', envelopeBody: delivery.envelopeBody });
  });

  it('refuses a claim check whose envelope is neither staged nor recorded', async () => {
    const delivery = newDelivery(STAGE_ENVELOPES_OVER_BYTES * 2);
    const { envelopeBody: _, ...claim } = delivery;
    await expect(recordNewDelivery(database.db, { ...claim, envelopeStaged: true })).rejects.toThrow(
      `Delivery ${delivery.id} was never recorded and its staged envelope is gone`,
    );
    expect(await recordedOf(delivery.id)).toBeUndefined();
  });

  it('lets retention purge a staged envelope whose start never happened, once it is older than the deliveries kept', async () => {
    const delivery = newDelivery(STAGE_ENVELOPES_OVER_BYTES * 2);
    await checkIn(database.db, delivery);
    const { purgeBatch } = createRetentionActivities({ db: database.db });
    // Far older than any other test's rows in this shared database, so this purge touches only this one.
    const cutoff = new Date(Date.now() - 3650 * DAY_MS).toISOString();
    await purgeBatch({ target: 'deliveries', cutoff, batchSize: 1000 });
    expect(await stagedOf(delivery.id)).toHaveLength(1);
    await database.db
      .update(stagedEnvelopes)
      .set({ createdAt: new Date(Date.now() - 3651 * DAY_MS) })
      .where(eq(stagedEnvelopes.deliveryId, delivery.id));
    await purgeBatch({ target: 'deliveries', cutoff, batchSize: 1000 });
    expect(await stagedOf(delivery.id)).toEqual([]);
  });
});
