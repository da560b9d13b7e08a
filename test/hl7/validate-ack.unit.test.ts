import { describe, expect, it } from 'vitest';
import { acknowledgementsDue } from '../../hl7/ack';
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
function ackOf(text: string, conformance: 'lenient' | 'strict' = 'lenient') {
  const outcome = processHl7(text, { conformance });
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

  // Each class of problem: the text, MSA-1 when lenient (the default) and when strict, ERR-3 code and ERR-2 location.
  // Header problems (not a well-formed v2 message) are AR and a missing PID on a patient message AE in
  // both modes; a missing or malformed field is a warning (AA, ERR-4 = W) unless strict (AE, ERR-4 = E).
  const cases: [string, string, 'AA' | 'AE' | 'AR', 'AE' | 'AR', number, string][] = [
    ['malformed message type', withField('adt-a01', 'MSH', 9, 'A1^Q99^XYZ_Q99'), 'AR', 'AR', 200, 'MSH^1^9^1^1'],
    ['malformed trigger event', withField('adt-a01', 'MSH', 9, 'ADT^A9^ADT_A01'), 'AR', 'AR', 201, 'MSH^1^9^1^2'],
    ['missing control id (MSH-10)', withField('adt-a01', 'MSH', 10, ''), 'AR', 'AR', 101, 'MSH^1^10'],
    ['missing version (MSH-12)', withField('adt-a01', 'MSH', 12, ''), 'AR', 'AR', 101, 'MSH^1^12'],
    ['not a v2 version', withField('adt-a01', 'MSH', 12, '3.0'), 'AR', 'AR', 203, 'MSH^1^12'],
    ['unsupported processing id', withField('adt-a01', 'MSH', 11, 'X'), 'AR', 'AR', 202, 'MSH^1^11'],
    ['no PID on a patient message', without('adt-a01', 'PID'), 'AE', 'AE', 100, 'PID'],
    ['missing required segment (PV1 in A01)', without('adt-a01', 'PV1'), 'AA', 'AE', 100, 'PV1'],
    ['missing OBX in ORU', without('oru-r01', 'OBX'), 'AA', 'AE', 100, 'OBX'],
    ['missing patient identifier (CX.1)', withField('adt-a01', 'PID', 3, '^^^SANDBOX^MR'), 'AA', 'AE', 101, 'PID^1^3^1^1'],
    ['missing family name (XPN.1)', withField('adt-a01', 'PID', 5, '^Jane'), 'AA', 'AE', 101, 'PID^1^5^1^1'],
    ['bad birth date (DTM)', withField('adt-a01', 'PID', 7, '19801340'), 'AA', 'AE', 102, 'PID^1^7^1^1'],
    ['bad sex (table 0001)', withField('adt-a01', 'PID', 8, 'Q'), 'AA', 'AE', 103, 'PID^1^8^1^1'],
    ['bad patient class (table 0004)', withField('adt-a01', 'PV1', 2, 'Z'), 'AA', 'AE', 103, 'PV1^1^2^1^1'],
    ['non-numeric NM value', withField('oru-r01', 'OBX', 5, 'nine'), 'AA', 'AE', 102, 'OBX^1^5^1^1'],
    ['missing observation code (CWE.1)', withField('oru-r01', 'OBX', 3, '^no code'), 'AA', 'AE', 101, 'OBX^1^3^1^1'],
    ['bad result status (table 0085)', withField('oru-r01', 'OBX', 11, 'Q'), 'AA', 'AE', 103, 'OBX^1^11^1^1'],
    ['missing vaccine code', withField('vxu-v04', 'RXA', 5, ''), 'AA', 'AE', 101, 'RXA^1^5^1^1'],
  ];

  it.each(cases)('%s', (_name, text, lenientCode, strictCode, errorCode, location) => {
    for (const [conformance, code] of [
      ['lenient', lenientCode],
      ['strict', strictCode],
    ] as const) {
      const { outcome, msa, errs } = ackOf(text, conformance);
      const severity = code === 'AA' ? 'W' : 'E';
      expect(msa.get(1), conformance).toBe(code);
      expect(msa.get(2)).toBe(parseHl7(text).header.get(10));
      expect(errs.map((err) => [err.field(2).raw, err.get(3, 1), err.get(3, 3), err.get(4)])).toContainEqual([
        location,
        String(errorCode),
        'HL70357',
        severity,
      ]);
      // The JSON form names the same problem, as an error or a warning.
      expect(outcome.ack.errors).toContainEqual(expect.objectContaining({ location, code: errorCode, severity }));
      expect(outcome.ack.errors.find((error) => error.location === location)!.segment).toBe(location.split('^')[0]);
      // An accepted message is mapped, the finding's field left out.
      if (code === 'AA') expect(outcome.kind === 'acknowledged' && outcome.bundle?.type).toBe('message');
    }
  });

  it('reports every problem, one ERR each, with its message in ERR-8', () => {
    const text = withField(withField('adt-a01', 'PID', 7, 'yesterday'), 'PID', 8, 'Q');
    const { msa, errs } = ackOf(text, 'strict');
    expect(msa.get(1)).toBe('AE');
    expect(errs.map((err) => err.field(2).raw)).toEqual(['PID^1^7^1^1', 'PID^1^8^1^1']);
    expect(errs[0]!.get(8)).toContain('"yesterday" is not an HL7 date/time');
    const lenient = ackOf(text);
    expect(lenient.msa.get(1)).toBe('AA');
    expect(lenient.msa.get(3)).toBe('Message accepted with 2 warning(s)');
    expect(lenient.errs.map((err) => [err.field(2).raw, err.get(4)])).toEqual([
      ['PID^1^7^1^1', 'W'],
      ['PID^1^8^1^1', 'W'],
    ]);
    // The malformed birth date and sex are left out of the Patient.
    const patient = lenient.outcome.kind === 'acknowledged' ? lenient.outcome.bundle!.entry![1]!.resource : undefined;
    expect(patient).toMatchObject({ resourceType: 'Patient' });
    expect(patient).not.toHaveProperty('birthDate');
    expect(patient).not.toHaveProperty('gender');
  });

  // What real feeds send every day and issue 21 found refused: each is accepted, with at most warnings.
  const everyday: [string, string][] = [
    ['IN1-3 empty', withField('adt-a01', 'IN1', 3, '')],
    ['PV1-2 empty', withField('adt-a01', 'PV1', 2, '')],
    ['OBX-2 empty on a text result', withField(withField('oru-r01', 'OBX', 2, ''), 'OBX', 5, 'Specimen hemolyzed')],
    ['OBR-4 with only text', withField('oru-r01', 'OBR', 4, '^Complete blood count')],
    ['PID-7 a year and month', withField('adt-a01', 'PID', 7, '198005')],
    ['no ORC before the OBR', without('orm-o01', 'ORC')],
    ['an OBX before its OBR', renderTemplate('oru-r01')!.er7.replace(/\r(OBR\|[^\r]*)\r(OBX\|[^\r]*)/, '\r$2\r$1')],
    ['version 2.2', withField('adt-a01', 'MSH', 12, '2.2')],
    ['an unknown Z-segment', `${renderTemplate('adt-a01')!.er7}\rZPV|1|local^value`],
  ];
  it.each(everyday)('accepts %s (AA, warnings at most)', (_name, text) => {
    const { outcome, msa } = ackOf(text);
    expect(msa.get(1)).toBe('AA');
    expect(outcome.ack.errors.every((error) => error.severity === 'W')).toBe(true);
    expect(outcome.kind === 'acknowledged' && outcome.bundle?.entry?.[0]?.resource?.resourceType).toBe('MessageHeader');
  });

  it('lists at most 100 findings in an ACK, the last ERR counting the rest', () => {
    const lines = renderTemplate('oru-r01')!.er7.split('\r');
    const text = [...lines, ...Array.from({ length: 150 }, (_, index) => `OBX|${index + 10}|NM|2093-3^Cholesterol^LN||high||||||F`)].join('\r');
    const { outcome, msa, errs } = ackOf(text);
    expect(msa.get(1)).toBe('AA');
    expect(errs).toHaveLength(100);
    expect(errs.at(-1)!.get(8)).toMatch(/^51 more finding\(s\) not listed, the first at OBX\^/);
    expect(outcome.ack.errors).toHaveLength(100);
  });

  it('accepts v2.1 and v2.2 messages, and answers in their version', () => {
    for (const version of ['2.1', '2.2', '2.8.2']) {
      const { msa, ack } = ackOf(withField('adt-a01', 'MSH', 12, version));
      expect(msa.get(1), version).toBe('AA');
      expect(ack.header.get(12)).toBe(version);
    }
  });

  it('accepts any trigger of any message type, with MSH-9 of the ACK naming it', () => {
    for (const type of ['ADT^A05^ADT_A05', 'MFN^M02^MFN_M02', 'ZXX^Z01']) {
      const { outcome, msa, ack } = ackOf(withField('adt-a01', 'MSH', 9, type));
      expect(msa.get(1), type).toBe('AA');
      expect(ack.header.field(9).raw).toBe(`ACK^${type.split('^')[1]}^ACK`);
      expect(outcome.kind === 'acknowledged' && outcome.event).toBe('hl7.message.received');
    }
  });

  it('locates a problem in a repeated segment by its sequence', () => {
    const lines = renderTemplate('oru-r01')!.er7.split('\r');
    const second = lines.findIndex((line) => line.startsWith('OBX|2|'));
    lines[second] = lines[second]!.replace('|SN|', '|NM|').replace('>^60', '>60');
    const { errs } = ackOf(lines.join('\r'), 'strict');
    expect(errs.map((err) => [err.field(2).raw, err.get(3)])).toEqual([['OBX^2^5^1^1', '102']]);
  });

  it('writes ERR-1 as well for v2.3/2.4 senders, whose parsers only know that field', () => {
    const { errs } = ackOf(withField('orm-o01', 'PID', 8, 'Q'), 'strict');
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
    expect(msa.get(1)).toBe('AA');
    expect(ack.segment('ERR')!.get(8)).toContain('"a&b"');
  });
});

describe('acknowledgement modes (MSH-15/MSH-16)', () => {
  it('says which ACKs are due: original mode one application ACK, enhanced mode as table 0155 asks', () => {
    expect(acknowledgementsDue('', '', 'AE')).toEqual({ mode: 'original', accept: null, application: true });
    expect(acknowledgementsDue('AL', 'NE', 'AA')).toEqual({ mode: 'enhanced', accept: 'CA', application: false });
    expect(acknowledgementsDue('AL', 'AL', 'AR')).toEqual({ mode: 'enhanced', accept: 'CR', application: true });
    expect(acknowledgementsDue('NE', 'ER', 'AA')).toEqual({ mode: 'enhanced', accept: null, application: false });
    expect(acknowledgementsDue('NE', 'ER', 'AE')).toEqual({ mode: 'enhanced', accept: null, application: true });
    expect(acknowledgementsDue('ER', 'SU', 'AA')).toEqual({ mode: 'enhanced', accept: null, application: true });
    expect(acknowledgementsDue('SU', 'SU', 'AR')).toEqual({ mode: 'enhanced', accept: null, application: false });
    // An empty condition beside a valued one counts as AL.
    expect(acknowledgementsDue('', 'NE', 'AA')).toEqual({ mode: 'enhanced', accept: 'CA', application: false });
  });

  it('gives each processed message the acknowledgements its header asks for', () => {
    const enhanced = processHl7(withField(withField('adt-a01', 'MSH', 15, 'AL'), 'MSH', 16, 'NE'));
    expect(enhanced.kind === 'acknowledged' && enhanced.due).toEqual({ mode: 'enhanced', accept: 'CA', application: false });
    const original = processHl7(renderTemplate('adt-a01')!.er7);
    expect(original.kind === 'acknowledged' && original.due).toEqual({ mode: 'original', accept: null, application: true });
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
