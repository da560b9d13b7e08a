import { asFhirJson } from '../fhir/resource-json';
import type { PrivacyMode } from '../privacy/guard';
import { type AckAddressee, addresseeOf } from './ack';
import { type Hl7Outcome, processHl7 } from './process';
import type { ConformanceMode } from './validate';

type WithoutParsed<T> = T extends unknown ? Omit<T, 'message' | 'bundle'> : never;

/**
 * An Hl7Outcome as plain data, fit to cross a thread (hl7/off-loop.ts): the parsed message and the
 * Bundle object stay where they were made; what the caller needs of them travels as values, the
 * Bundle as its JSON text, which is what the envelope carries anyway.
 */
export type PortableHl7Outcome = WithoutParsed<Hl7Outcome> & {
  /** From the parsed MSH: the ACK's addressee, and MSH-5/MSH-6 that name a connection's HL7 identity. */
  header?: { addressee: AckAddressee; receivingApplication: string; receivingFacility: string };
  /** The mapped Bundle, as JSON. */
  bundleJson?: string;
};

export function portableOutcome(outcome: Hl7Outcome): PortableHl7Outcome {
  if (outcome.kind !== 'acknowledged') return outcome;
  const { message, bundle, ...rest } = outcome;
  return {
    ...rest,
    ...(message && {
      header: { addressee: addresseeOf(message), receivingApplication: message.header.get(5), receivingFacility: message.header.get(6) },
    }),
    ...(bundle && { bundleJson: JSON.stringify(asFhirJson(bundle)) }),
  };
}

/** What a thread of the off-loop pool is given: the message, how strictly to check it, and what a real identifier makes of it. */
export interface Hl7Task {
  text: string;
  conformance?: ConformanceMode;
  privacy?: PrivacyMode;
}

/** processHl7, answered as plain data: the task the off-loop pool's threads run. */
export function processHl7Portable({ text, conformance, privacy }: Hl7Task): PortableHl7Outcome {
  return portableOutcome(processHl7(text, { conformance, privacy }));
}
