import { z } from 'zod';
import { acceptHl7, type Hl7AcceptDependencies, type Hl7Recipient, SEND_AGAIN } from '../../hl7/accept';
import { ackJson, addresseeFromText, buildAck, type Hl7Ack } from '../../hl7/ack';
import { batchAck, splitStream } from '../../hl7/batch';
import { readMsh } from '../../hl7/header';
import { acceptedAck, acknowledgementsFor } from '../../hl7/inject';
import type { Hl7ConformanceMode } from '../../hl7/vocabulary';
import type { PrivacyMode } from '../../privacy/guard';
import { ApiProblem } from '../http/problem';

/**
 * POST /v1/sandbox/hl7/inject with a batch (FHS/BHS … BTS/FTS) or several messages in one body:
 * each message is processed and acknowledged on its own (as its MSH-15/MSH-16 ask), each accepted
 * one becomes its own delivery, and the answer is the batch acknowledgement.
 */

export const batchResultSchema = z
  .object({
    batch_ack: z.string().meta({ description: 'The batch acknowledgement in ER7: FHS (when sent one)/BHS, an ACK per message, BTS/FTS' }),
    messages: z.array(
      z.object({
        message_control_id: z.string().meta({ description: "The message's MSH-10" }),
        code: z.enum(['AA', 'AE', 'AR']).meta({ description: 'Its application acknowledgement code' }),
        acks: z.array(z.string()).meta({ description: 'The acknowledgements it got in ER7, as MSH-15/MSH-16 ask (original mode: one)' }),
        errors: z.array(z.object({ location: z.string(), code: z.number().int(), message: z.string() })),
        delivery_id: z.string().nullable().meta({ description: 'The delivery it became, when accepted' }),
      }),
    ),
  })
  .meta({ id: 'Hl7BatchResult' });

export type BatchResult = z.input<typeof batchResultSchema>;

/** Each accepted message starts a workflow while the request waits (about 20 a second under load, bench/hl7.ts). */
export const MAX_HTTP_BATCH_MESSAGES = 100;

export async function injectHl7Batch(
  deps: Hl7AcceptDependencies,
  text: string,
  recipientFor: (application: string, facility: string) => Promise<Hl7Recipient>,
  /** How strictly to check, when the request says; else each message's recipient identity decides. */
  conformance?: Hl7ConformanceMode,
  /** What a real identifier makes of a message (hl7/privacy.ts). */
  privacy?: PrivacyMode,
): Promise<{ accepted: number; result: BatchResult }> {
  const stream = splitStream(text);
  if (stream.messages.length > MAX_HTTP_BATCH_MESSAGES)
    throw new ApiProblem(
      422,
      'hl7_batch_too_large',
      `A batch over HTTP holds at most ${MAX_HTTP_BATCH_MESSAGES} messages (each starts a delivery while the request waits); this one holds ${stream.messages.length}. Send it in parts, or over MLLP.`,
    );
  const messages: BatchResult['messages'] = [];
  const answers: string[] = [];
  let accepted = 0;
  for (const message of stream.messages) {
    const msh = readMsh(message);
    const addressee = addresseeFromText(message);
    let application: Hl7Ack;
    let deliveryId: string | null = null;
    let onOurSide = false;
    try {
      const acceptance = await acceptHl7(deps, { text: message, conformance, privacy, recipientFor });
      if (acceptance.kind === 'accepted') {
        deliveryId = acceptance.delivery.id;
        accepted++;
        application = acceptedAck(addressee, acceptance.outcome, deliveryId);
      } else application = acceptance.outcome.ack;
    } catch (error) {
      if (error instanceof ApiProblem) throw error;
      deps.onError?.(error);
      onOurSide = true;
      // HL7 table 0008: AR is a rejection for a reason unrelated to the content (send it again).
      application = buildAck('AR', addressee, [{ code: 207, location: { segment: 'MSH', sequence: 1 }, message: SEND_AGAIN, reject: true }]);
    }
    const acks = acknowledgementsFor(msh?.get(15) ?? '', msh?.get(16) ?? '', application, addressee, { onOurSide });
    answers.push(...acks);
    const { ack, errors } = ackJson(application);
    messages.push({
      message_control_id: ack.message_control_id,
      code: ack.code as 'AA' | 'AE' | 'AR',
      acks,
      errors: errors.map((error) => ({ location: error.location, code: error.code, message: error.message })),
      delivery_id: deliveryId,
    });
  }
  return { accepted, result: { batch_ack: batchAck(stream, answers), messages } };
}
