import { describe, expect, it } from 'vitest';
import { processedOffLoop, processHl7OffLoop } from '../../hl7/off-loop';
import { MAX_MESSAGE_BYTES } from '../../hl7/parse';
import { processHl7Portable } from '../../hl7/portable-outcome';
import { STAGE_ENVELOPES_OVER_BYTES } from '../../webhooks/claim-check';
import { largeOruR01 } from '../support/large-hl7';

/** The largest message the sandbox takes, in process; large-message.test.ts delivers it end to end. */

/** Temporal refuses a payload over 2 MB; the envelope must be above that for large-message.test.ts to mean anything. */
const TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024;

describe('a 256 KiB HL7 v2 message', () => {
  it('is built at the limit, and its envelope is over the claim-check threshold and Temporal’s payload limit', () => {
    const text = largeOruR01({ controlId: 'SYN-BIG-0' });
    expect(Buffer.byteLength(text)).toBe(MAX_MESSAGE_BYTES);
    expect(STAGE_ENVELOPES_OVER_BYTES).toBeLessThan(TEMPORAL_PAYLOAD_LIMIT);
  });

  it('is processed off the event loop, with the same outcome as in place', async () => {
    const text = largeOruR01({ controlId: 'SYN-BIG-LOOP' });
    // A thread's answer arrives as a message on a later turn of the event loop, after this setImmediate;
    // work done in place would resolve first, without the loop ever turning.
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const before = { utilization: performance.eventLoopUtilization(), processed: processedOffLoop() };
    const offLoop = await processHl7OffLoop(text);
    expect(processedOffLoop()).toBe(before.processed + 1);
    // Meanwhile this thread's loop mostly waited, where processing in place keeps it busy throughout.
    expect(performance.eventLoopUtilization(before.utilization).utilization).toBeLessThan(0.5);
    expect(turned).toBe(true);
    const inPlace = processHl7Portable({ text });
    expect(offLoop.kind).toBe('acknowledged');
    expect({ ...offLoop, ack: undefined }).toEqual({ ...inPlace, ack: undefined });
    expect(offLoop.ack.code).toBe('AA');
  }, 60_000);
});
