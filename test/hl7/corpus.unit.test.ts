import type { Bundle } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { parseHl7 } from '../../hl7/parse';
import { processHl7 } from '../../hl7/process';
import { fhirSchemaErrors } from '../support/fhir-schema';
import { fhirErrors } from '../support/fhir-validator';
import { generateCorpus, triggerEventsOfStandard } from './corpus/generate';
import { NEGATIVES, SEGMENT_NEGATIVES } from './corpus/negatives';

/**
 * The generated corpus (test/hl7/corpus/generate.ts: every trigger event of v2.3 to 2.7.1 from the
 * standard's machine-readable definitions, with real-feed variation; all synthetic) and the
 * hand-written negatives, in process. corpus.test.ts sends a sample of them through the HTTP inject.
 */
const corpus = generateCorpus();
const outcomes = new Map(corpus.map((message) => [message.id, processHl7(message.text)]));

describe('the generated corpus', () => {
  it('holds at least 300 messages: every trigger event of 2.3 to 2.7.1, with the variation real feeds have', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300);
    const types = new Set(corpus.map((message) => message.type));
    const missing = [...triggerEventsOfStandard()].filter((type) => !types.has(type));
    expect(missing).toEqual([]);
    const features = new Set(corpus.flatMap((message) => message.features));
    for (const feature of ['CR', 'LF', 'CRLF', 'BOM', 'custom delimiters', 'Z-segment', 'enhanced mode'])
      expect(features, feature).toContain(feature);
    const versions = new Set(corpus.map((message) => message.version));
    for (const version of ['2.1', '2.2', '2.3', '2.3.1', '2.4', '2.5', '2.5.1', '2.6', '2.7', '2.7.1', '2.8', '2.8.2'])
      expect(versions).toContain(version);
    // Escape sequences, partial dates (a year or a month alone), empty optional fields, repeated segments.
    expect(corpus.some((message) => /\\(F|S|T|R|E|X0A|\.br)\\/.test(message.text))).toBe(true);
    expect(corpus.some((message) => /\|(19|20)\d{2}(0[1-9]|1[0-2])?\|/.test(message.text))).toBe(true);
    expect(corpus.some((message) => message.text.includes('|||'))).toBe(true);
    expect(corpus.some((message) => /(\r|\n)OBX\|[^\r\n]*[\r\n]+OBX\|/.test(message.text))).toBe(true);
    // Deterministic: the same seed, the same corpus.
    expect(generateCorpus().map((message) => message.text)).toEqual(corpus.map((message) => message.text));
  });

  it('is accepted (AA, warnings allowed) for at least 97% of its well-formed messages, each ACK naming its MSH-10', () => {
    const refused: string[] = [];
    let warnings = 0;
    for (const message of corpus) {
      const outcome = outcomes.get(message.id)!;
      expect(outcome.kind, message.id).toBe('acknowledged');
      expect(outcome.ack.controlId, message.id).toBe(message.controlId);
      expect(parseHl7(outcome.ack.er7).segment('MSA')!.get(2), message.id).toBe(message.controlId);
      if (outcome.ack.code === 'AA') warnings += outcome.ack.errors.length;
      else refused.push(`${message.id}: ${outcome.ack.errors.map((error) => `${error.location} ${error.message}`).join('; ')}`);
    }
    const rate = (corpus.length - refused.length) / corpus.length;
    console.log(
      `HL7 corpus: ${corpus.length - refused.length} of ${corpus.length} well-formed messages accepted (${(rate * 100).toFixed(2)}%), ${warnings} warnings; refused: ${refused.slice(0, 10).join(' | ') || 'none'}`,
    );
    expect(rate).toBeGreaterThanOrEqual(0.97);
  });

  it('maps every accepted message to a valid R4 message Bundle, MessageHeader first, its references resolving inside it', {
    timeout: 300_000,
  }, () => {
    const invalid: string[] = [];
    for (const [index, message] of corpus.entries()) {
      const outcome = outcomes.get(message.id)!;
      if (outcome.kind !== 'acknowledged' || outcome.ack.code !== 'AA') continue;
      const bundle = outcome.bundle as Bundle;
      expect(bundle.type).toBe('message');
      expect(bundle.entry![0]!.resource!.resourceType).toBe('MessageHeader');
      // Every Bundle against the R4 JSON schema; every sixteenth one against the profile validator too
      // (base R4 cardinalities and invariants), which takes longer.
      if (index % 16 === 0) for (const error of fhirErrors(bundle)) invalid.push(`${message.id} ${error}`);
      const fullUrls = new Set(bundle.entry!.map((entry) => entry.fullUrl));
      for (const entry of bundle.entry!) {
        for (const error of fhirSchemaErrors(entry.resource!)) invalid.push(`${message.id} ${entry.resource!.resourceType} ${error}`);
        for (const reference of JSON.stringify(entry.resource).match(/"reference":"[^"]*"/g) ?? []) {
          if (!fullUrls.has(reference.slice(13, -1))) invalid.push(`${message.id} ${entry.resource!.resourceType} refers to ${reference}`);
        }
      }
      expect(outcome.event).toMatch(/^hl7\./);
    }
    expect(invalid.slice(0, 20)).toEqual([]);
  });

  it('is refused in strict mode exactly where it carries findings, which lenient mode answers as warnings', () => {
    let strictRefused = 0;
    for (const message of corpus) {
      const lenient = outcomes.get(message.id)!;
      const strict = processHl7(message.text, { conformance: 'strict' });
      const findings = lenient.ack.errors.filter((error) => error.severity === 'W');
      if (lenient.ack.code === 'AA' && findings.length > 0) {
        expect(strict.ack.code, message.id).toBe('AE');
        expect(strict.ack.errors.map((error) => [error.location, error.code])).toEqual(findings.map((finding) => [finding.location, finding.code]));
        strictRefused++;
      } else expect(strict.ack.code, message.id).toBe(lenient.ack.code);
    }
    console.log(`HL7 corpus in strict mode: ${strictRefused} of ${corpus.length} refused (AE) for the findings lenient mode warns about`);
    expect(strictRefused).toBeGreaterThan(0);
  });
});

describe('the hand-written negatives', () => {
  it.each(NEGATIVES.map((negative) => [negative.name, negative] as const))('refuses %s with an ERR naming segment and field', (_name, negative) => {
    for (const conformance of ['lenient', 'strict'] as const) {
      const outcome = processHl7(negative.text, { conformance });
      expect(outcome.ack.code).toBe(negative.code);
      const ack = parseHl7(outcome.ack.er7);
      expect(ack.segment('MSA')!.get(2)).toBe(parseHl7Header(negative.text));
      const errs = ack.all('ERR').map((err) => [err.field(2).raw, err.get(3)]);
      expect(errs).toContainEqual([negative.location, String(negative.errorCode)]);
      const [segment, , field] = negative.location.split('^');
      expect(segment).toMatch(/^[A-Z][A-Z0-9]{2}$/);
      expect(Number(field)).toBeGreaterThan(0);
    }
  });

  it.each(SEGMENT_NEGATIVES.map((negative) => [negative.name, negative] as const))('refuses %s with an ERR naming the segment', (_name, negative) => {
    const outcome = processHl7(negative.text);
    expect(outcome.ack.code).toBe(negative.code);
    expect(
      parseHl7(outcome.ack.er7)
        .all('ERR')
        .map((err) => [err.field(2).raw, err.get(3)]),
    ).toContainEqual([negative.location, String(negative.errorCode)]);
  });
});

/** MSH-10 of a message, read off its first line (the negatives cannot all be parsed). */
function parseHl7Header(text: string): string {
  return text.split('\r')[0]!.split('|')[9] ?? '';
}
