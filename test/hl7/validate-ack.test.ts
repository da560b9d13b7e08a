import { describe, expect, it } from 'vitest';
import { parseHl7 } from '../../hl7/parse';
import { processHl7 } from '../../hl7/process';
import { listTemplates, renderTemplate } from '../../hl7/templates';

/** A template with one segment's field replaced: the way a sender's mistake looks. */
function withField(templateIdOrText: string, segment: string, field: number, value: string): string {
  const text = templateIdOrText.startsWith('MSH') ? templateIdOrText : renderTemplate(templateIdOrText)!.er7;
  const lines = text.split('\r');
  const index = lines.findIndex((line) => line.startsWith(`${segment}|`));
  const fields = lines[index]!.split('|');
  // MSH-1 is the separator itself, so MSH-n is fields[n - 1]; for other segments it is fields[n].
  const position = segment === 'MSH' ? field - 1 : field;
  while (fields.length <= position) fields.push('');
  fields[position] = value;
  lines[index] = fields.join('|');
  return lines.join('\r');
}
const without = (templateId: string, segment: string) =>
  renderTemplate(templateId)!
    .er7.split('\r')
    .filter((line) => !line.startsWith(`${segment}|`))
    .join('\r');

/** The ACK's segments, parsed back with the same parser a sender would use. */
function ackOf(text: string) {
  const outcome = processHl7(text);
  const ack = parseHl7(outcome.ack.er7);
  return { outcome, ack, msa: ack.segment('MSA')!, errs: ack.all('ERR') };
}

describe('validation and ACKs', () => {
  it('accepts a well-formed message with AA, MSA-2 = its MSH-10 and no ERR', () => {
    const text = renderTemplate('adt-a01')!.er7;
    const { outcome, ack, msa, errs } = ackOf(text);
    expect(outcome.kind).toBe('acknowledged');
    expect(msa.get(1)).toBe('AA');
    expect(msa.get(2)).toBe(parseHl7(text).header.get(10));
    expect(errs).toHaveLength(0);
    expect(ack.header.get(9, 1)).toBe('ACK');
    expect(ack.header.get(9, 2)).toBe('A01');
    expect(ack.header.get(12)).toBe('2.5.1');
    expect(ack.header.get(5)).toBe('SYNTHETIC-EHR');
  });

  // Each error class: the text, the expected MSA-1, ERR-3 code and ERR-2 location.
  const cases: [string, string, 'AE' | 'AR', number, string][] = [
    ['unknown message type', withField('adt-a01', 'MSH', 9, 'XYZ^Q99^XYZ_Q99'), 'AR', 200, 'MSH^1^9^1^1'],
    ['unknown trigger of a known type', withField('adt-a01', 'MSH', 9, 'ADT^A99^ADT_A01'), 'AR', 201, 'MSH^1^9^1^2'],
    ['missing control id (MSH-10)', withField('adt-a01', 'MSH', 10, ''), 'AR', 101, 'MSH^1^10'],
    ['missing version (MSH-12)', withField('adt-a01', 'MSH', 12, ''), 'AR', 101, 'MSH^1^12'],
    ['unsupported version', withField('adt-a01', 'MSH', 12, '2.1'), 'AR', 203, 'MSH^1^12'],
    ['missing required segment (PV1 in A01)', without('adt-a01', 'PV1'), 'AE', 100, 'PV1'],
    ['missing OBX in ORU', without('oru-r01', 'OBX'), 'AE', 100, 'OBX'],
    ['missing patient identifier (CX.1)', withField('adt-a01', 'PID', 3, '^^^SANDBOX^MR'), 'AE', 101, 'PID^1^3^1^1'],
    ['missing family name (XPN.1)', withField('adt-a01', 'PID', 5, '^Jane'), 'AE', 101, 'PID^1^5^1^1'],
    ['bad birth date (DTM)', withField('adt-a01', 'PID', 7, '19801340'), 'AE', 102, 'PID^1^7^1^1'],
    ['bad sex (table 0001)', withField('adt-a01', 'PID', 8, 'Q'), 'AE', 103, 'PID^1^8^1^1'],
    ['bad patient class (table 0004)', withField('adt-a01', 'PV1', 2, 'Z'), 'AE', 103, 'PV1^1^2^1^1'],
    ['non-numeric NM value', withField('oru-r01', 'OBX', 5, 'nine'), 'AE', 102, 'OBX^1^5^1^1'],
    ['missing observation code (CWE.1)', withField('oru-r01', 'OBX', 3, '^no code'), 'AE', 101, 'OBX^1^3^1^1'],
    ['bad result status (table 0085)', withField('oru-r01', 'OBX', 11, 'Q'), 'AE', 103, 'OBX^1^11^1^1'],
    ['missing vaccine code', withField('vxu-v04', 'RXA', 5, ''), 'AE', 101, 'RXA^1^5^1^1'],
  ];

  it.each(cases)('%s', (_name, text, code, errorCode, location) => {
    const { outcome, msa, errs } = ackOf(text);
    expect(msa.get(1)).toBe(code);
    expect(msa.get(2)).toBe(parseHl7(text).header.get(10));
    expect(errs.map((err) => [err.field(2).raw, err.get(3, 1), err.get(3, 3), err.get(4)])).toContainEqual([
      location,
      String(errorCode),
      'HL70357',
      'E',
    ]);
    // The JSON form names the same problem.
    expect(outcome.ack.errors).toContainEqual(expect.objectContaining({ location, code: errorCode, severity: 'E' }));
    expect(outcome.ack.errors.find((error) => error.location === location)!.segment).toBe(location.split('^')[0]);
  });

  it('reports every problem, one ERR each, with its message in ERR-8', () => {
    const text = withField(withField('adt-a01', 'PID', 7, 'yesterday'), 'PID', 8, 'Q');
    const { msa, errs } = ackOf(text);
    expect(msa.get(1)).toBe('AE');
    expect(errs.map((err) => err.field(2).raw)).toEqual(['PID^1^7^1^1', 'PID^1^8^1^1']);
    expect(errs[0]!.get(8)).toContain('"yesterday" is not an HL7 date/time');
  });

  it('locates a problem in a repeated segment by its sequence', () => {
    const lines = renderTemplate('oru-r01')!.er7.split('\r');
    const second = lines.findIndex((line) => line.startsWith('OBX|2|'));
    lines[second] = lines[second]!.replace('|SN|', '|NM|').replace('>^60', '>60');
    const { errs } = ackOf(lines.join('\r'));
    expect(errs.map((err) => [err.field(2).raw, err.get(3)])).toEqual([['OBX^2^5^1^1', '102']]);
  });

  it('writes ERR-1 as well for v2.3/2.4 senders, whose parsers only know that field', () => {
    const { errs } = ackOf(withField('orm-o01', 'PID', 8, 'Q'));
    expect(errs).toHaveLength(1);
    expect([errs[0]!.get(1, 1), errs[0]!.get(1, 2), errs[0]!.get(1, 3), errs[0]!.get(1, 4, 1)]).toEqual(['PID', '1', '8', '103']);
  });

  it('answers HL7 it cannot read with AR, naming the control id it could find', () => {
    const { outcome, msa, errs } = ackOf('MSH|^^\\&|A|B|C|D|20250101||ADT^A01|CTRL9|P|2.5\rPID|1');
    expect(outcome.kind).toBe('acknowledged');
    expect(msa.get(1)).toBe('AR');
    expect(msa.get(2)).toBe('CTRL9');
    expect(errs[0]!.get(3)).toBe('100');
  });

  it('tells text that is not HL7 from HL7, and a message over 256 KiB', () => {
    expect(processHl7('{"hello":"world"}').kind).toBe('not_hl7');
    expect(processHl7('{"hello":"world"}').ack.code).toBe('AR');
    const big = `${renderTemplate('adt-a01')!.er7}\rZZZ|${'x'.repeat(256 * 1024)}`;
    const outcome = processHl7(big);
    expect(outcome.kind).toBe('too_large');
    expect(outcome.ack.code).toBe('AR');
    expect(outcome.ack.controlId).toBe(parseHl7(renderTemplate('adt-a01')!.er7).header.get(10));
  });

  it('escapes delimiters in what it echoes back', () => {
    const { msa, ack } = ackOf(withField('adt-a01', 'PID', 7, 'a\\T\\b'));
    expect(msa.get(1)).toBe('AE');
    expect(ack.segment('ERR')!.get(8)).toContain('"a&b"');
  });
});

describe('robustness', () => {
  /** A deterministic pseudo-random sequence, so a failure can be replayed. */
  function random(seed: number) {
    let state = seed;
    return () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
  }

  it('answers every mangled message with an ACK naming its control id, and never throws', () => {
    const next = random(42);
    const noise = ['|', '^', '~', '\\', '&', '\r', '\n', 'X', '9', '', '\\X41', '\\F', 'MSH|', '\u0000', 'é'];
    let answered = 0;
    for (const template of listTemplates()) {
      for (let round = 0; round < 150; round++) {
        const characters = [...template.er7];
        for (let edit = 0; edit < 1 + Math.floor(next() * 6); edit++) {
          const at = Math.floor(next() * characters.length);
          const action = next();
          if (action < 0.4) characters.splice(at, 1);
          else if (action < 0.8) characters.splice(at, 0, noise[Math.floor(next() * noise.length)]!);
          else characters.length = Math.max(3, at);
        }
        const outcome = processHl7(characters.join(''));
        expect(['AA', 'AE', 'AR']).toContain(outcome.ack.code);
        expect(parseHl7(outcome.ack.er7).segment('MSA')!.get(1)).toBe(outcome.ack.code);
        answered++;
      }
    }
    expect(answered).toBe(listTemplates().length * 150);
  });
});
