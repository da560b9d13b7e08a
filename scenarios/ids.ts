import { createHash } from 'node:crypto';
import { TypeID } from 'typeid-js';

/**
 * Ids a run derives instead of drawing: the same run, step and event always give the same delivery
 * and event ids, so a step retried after a worker died finds what it already emitted rather than
 * emitting it again; and the same seed always gives the same resource ids.
 */

function digest(...parts: string[]): Buffer {
  return createHash('sha256').update(parts.join('\u0000')).digest();
}

/**
 * A TypeID whose timestamp is the run's (so a run's deliveries sort with it) and whose other bits
 * come from `parts`, with the UUIDv7 version and variant bits set.
 */
function derivedId<P extends 'dlv' | 'evt'>(prefix: P, runId: string, ...parts: string[]): string {
  const runBytes = TypeID.fromString(runId, 'run').toUUIDBytes();
  const bytes = Uint8Array.from(digest(prefix, runId, ...parts).subarray(0, 16));
  bytes.set(runBytes.subarray(0, 6), 0);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  return TypeID.fromUUIDBytes(prefix, bytes).toString();
}

export function stepDeliveryId(runId: string, stepId: string, eventIndex: number): string {
  return derivedId('dlv', runId, stepId, String(eventIndex));
}

export function stepEventId(runId: string, stepId: string, eventIndex: number): string {
  return derivedId('evt', runId, stepId, String(eventIndex));
}

/**
 * The prefix of every FHIR resource id a run creates (FHIR ids allow letters, digits, `-` and `.`):
 * from the seed when one is given, so a seeded run is reproducible, else from the run id.
 */
export function resourceStamp(input: { runId: string; scenarioId: string; patientId: string; seed: string | null }): string {
  if (input.seed === null) return `run-${TypeID.fromString(input.runId, 'run').getSuffix()}`;
  return `seed-${digest(input.scenarioId, input.patientId, input.seed).toString('hex').slice(0, 16)}`;
}

/** A number in [0, 1) drawn from the stamp and a label: content that varies by run, reproducible by seed. */
export function seededFraction(stamp: string, label: string): number {
  return digest(stamp, label).readUInt32BE(0) / 2 ** 32;
}

const SEEDED_EPOCH = Date.parse('2026-01-05T08:00:00Z');
const DAY_MS = 86_400_000;

/**
 * Where a run's simulated clock starts: now, or for a seeded run a fixed morning in 2026 drawn
 * from the seed, so that its times are reproducible too.
 */
export function simulatedStartFor(stamp: string, seeded: boolean, now: Date): Date {
  if (!seeded) return new Date(Math.floor(now.getTime() / 1000) * 1000);
  return new Date(SEEDED_EPOCH + Math.floor(seededFraction(stamp, 'start') * 300) * DAY_MS);
}
