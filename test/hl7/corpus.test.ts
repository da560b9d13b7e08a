import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHl7 } from '../../hl7/parse';
import { processHl7 } from '../../hl7/process';
import { tenantReceivingAt } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { generateCorpus } from './corpus/generate';
import { NEGATIVES, SEGMENT_NEGATIVES } from './corpus/negatives';

/**
 * The generated corpus (test/hl7/corpus/generate.ts) and the hand-written negatives through the HTTP
 * inject: each answered as processing it in process answers it (corpus.unit.test.ts checks those answers).
 */
const ER7 = 'x-application/hl7-v2+er7';

describe('the corpus through POST /v1/sandbox/hl7/inject', () => {
  let service: TestService;
  let receiver: TestReceiver;
  let key: string;
  beforeAll(async () => {
    service = await startTestService();
    receiver = await startReceiver();
    ({ key } = await tenantReceivingAt(service, receiver.url));
  });
  afterAll(async () => {
    await receiver.close();
    await service.stop();
  });

  /** Every eighth message (each version and message family represented), and every negative. */
  const sample = generateCorpus().filter((_message, index) => index % 8 === 0);

  it('answers every message without a 5xx, AA with 202 and refusals with 422, each ACK naming its MSH-10', async () => {
    const statuses = new Map<number, number>();
    for (const message of sample) {
      const response = await service.call('/v1/sandbox/hl7/inject', { key, method: 'POST', body: message.text, headers: { 'content-type': ER7 } });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const expected = processHl7(message.text).ack.code === 'AA' ? 202 : 422;
      expect(response.status, `${message.id}: ${response.body}`).toBe(expected);
      expect(
        parseHl7(response.body as string)
          .segment('MSA')!
          .get(2),
        message.id,
      ).toBe(message.controlId);
    }
    for (const negative of [...NEGATIVES, ...SEGMENT_NEGATIVES]) {
      const response = await service.call('/v1/sandbox/hl7/inject', { key, method: 'POST', body: { message: negative.text } });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, negative.name).toBe(422);
      expect(response.body.ack.code).toBe(negative.code);
      expect(response.body.errors).toContainEqual(expect.objectContaining({ path: negative.location, code: negative.errorCode, severity: 'E' }));
    }
    console.log(
      `HL7 corpus through the inject: ${sample.length + NEGATIVES.length + SEGMENT_NEGATIVES.length} messages, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect([...statuses.keys()].every((status) => status < 500)).toBe(true);
  }, 300_000);
});
