import { describe, expect, it } from 'vitest';
import { escapeEr7 } from '../../hl7/er7';
import { DEFAULT_DELIMITERS, decodeEscapes, looksLikeHl7, MAX_MESSAGE_BYTES, NotHl7Error, parseHl7, UnreadableHl7Error } from '../../hl7/parse';

const ADT = [
  'MSH|^~\\&|EHR|HOSP|SANDBOX|SYNTHETIC|20250101120000+0000||ADT^A01^ADT_A01|MSG00001|P|2.5.1',
  'EVN|A01|20250101120000',
  'PID|1||MRN1^^^HOSP&1.2.3.4&ISO^MR~SSN9^^^SSA^SS||Doe^Jane^Q^^Dr.||19800101|F',
  'PV1|1|I|WARD^101^A',
  'ZPI|1|custom^value',
];

describe('parseHl7 (node-hl7-client with a normalizing, decoding layer)', () => {
  it('reads fields, repetitions, components and subcomponents with HL7 numbering', () => {
    const message = parseHl7(ADT.join('\r'));
    expect(message.segments.map((segment) => segment.name)).toEqual(['MSH', 'EVN', 'PID', 'PV1', 'ZPI']);
    const msh = message.header;
    expect([msh.get(1), msh.get(2), msh.get(9, 1), msh.get(9, 2), msh.get(9, 3), msh.get(10), msh.get(12)]).toEqual([
      '|',
      '^~\\&',
      'ADT',
      'A01',
      'ADT_A01',
      'MSG00001',
      '2.5.1',
    ]);
    const pid = message.segment('PID')!;
    expect(pid.field(3).repetitions).toHaveLength(2);
    expect(pid.field(3).repetitions[1]!.get(1)).toBe('SSN9');
    expect([pid.get(3, 4, 1), pid.get(3, 4, 2), pid.get(3, 4, 3)]).toEqual(['HOSP', '1.2.3.4', 'ISO']);
    expect([pid.get(5, 1), pid.get(5, 2), pid.get(5, 3), pid.get(5, 5)]).toEqual(['Doe', 'Jane', 'Q', 'Dr.']);
    expect(pid.field(99).present).toBe(false);
    expect(message.segment('ZPI')!.get(2, 2)).toBe('value');
  });

  it.each([
    ['\\r', '\r'],
    ['\\n', '\n'],
    ['\\r\\n', '\r\n'],
  ])('splits segments ended by %s, ignoring blank lines and a trailing end', (_name, end) => {
    const message = parseHl7(`${ADT.join(end)}${end}${end}`);
    expect(message.segments.map((segment) => segment.name)).toEqual(['MSH', 'EVN', 'PID', 'PV1', 'ZPI']);
    expect(message.segment('PV1')!.get(3, 1)).toBe('WARD');
  });

  it('takes custom encoding characters from MSH-1 and MSH-2', () => {
    const message = parseHl7(
      'MSH#:*!@#EHR#HOSP#SANDBOX#SYNTHETIC#20250101##ADT:A01:ADT_A01#X2#P#2.4\rPID#1##M1:::H@1.2@ISO:MR*M2##Doe!S!Smith:Jane!T!Ann!F!!R!!E!',
    );
    expect(message.delimiters).toMatchObject({ field: '#', component: ':', repetition: '*', escape: '!', subcomponent: '@' });
    expect(message.header.get(9, 2)).toBe('A01');
    const pid = message.segment('PID')!;
    expect(pid.field(3).repetitions.map((repetition) => repetition.get(1))).toEqual(['M1', 'M2']);
    expect(pid.get(3, 4, 2)).toBe('1.2');
    // !S! is this message's component separator, !T! its subcomponent separator, and so on.
    expect(pid.get(5, 1)).toBe('Doe:Smith');
    expect(pid.get(5, 2)).toBe('Jane@Ann#*!');
  });

  it('decodes every escape sequence, including UTF-8 hex and formatting commands', () => {
    const message = parseHl7(
      'MSH|^~\\&|A|B|C|D|20250101||ORU^R01|1|P|2.5\rOBX|1|TX|x||Pipe\\F\\Hat\\S\\Tilde\\R\\Amp\\T\\Esc\\E\\ caf\\XC3A9\\ \\X41\\ one\\.br\\two \\H\\bold\\N\\ \\E\\F\\E\\',
    );
    expect(message.segment('OBX')!.get(5)).toBe('Pipe|Hat^Tilde~Amp&Esc\\ café A one\ntwo bold \\F\\');
  });

  it('keeps Latin-1 hex that is not UTF-8, and unknown sequences as sent', () => {
    expect(decodeEscapes('caf\\XE9\\', DEFAULT_DELIMITERS)).toBe('café');
    expect(decodeEscapes('a\\Q\\b', DEFAULT_DELIMITERS)).toBe('a\\Q\\b');
  });

  it('round-trips values written by escapeEr7', () => {
    const value = 'a|b^c~d&e\\f\r\ng';
    expect(decodeEscapes(escapeEr7(value), DEFAULT_DELIMITERS)).toBe(value);
  });

  it.each(['2.3', '2.3.1', '2.4', '2.5', '2.5.1', '2.6', '2.7', '2.7.1', '2.8'])(
    'reads version %s, and the 2.7+ truncation character in MSH-2',
    (version) => {
      const message = parseHl7(`MSH|^~\\&#|A|B|C|D|20250101||ADT^A01|1|P|${version}\rPID|1||M1^^^H&1.2&ISO`);
      expect(message.header.get(12)).toBe(version);
      expect(message.segment('PID')!.get(3, 4, 2)).toBe('1.2');
    },
  );

  it('reads a 256 KiB message', () => {
    const head = 'MSH|^~\\&|A|B|C|D|20250101||ORU^R01|BIG|P|2.5.1\rPID|1||M1||Doe^Jane\rOBR|1||F1|58410-2^CBC^LN\r';
    const obx = (index: number) => `OBX|${index}|NM|718-7^Hemoglobin^LN||13.${index % 10}|g/dL^g/dL^UCUM|12-16|N|||F\r`;
    const lines = [head];
    let size = head.length;
    let index = 1;
    while (size + obx(index).length <= MAX_MESSAGE_BYTES) {
      lines.push(obx(index));
      size += obx(index++).length;
    }
    const text = lines.join('');
    expect(Buffer.byteLength(text)).toBeGreaterThan(MAX_MESSAGE_BYTES - 100);
    const message = parseHl7(text);
    expect(message.all('OBX')).toHaveLength(index - 1);
    expect(message.all('OBX').at(-1)!.get(5)).toBe(`13.${(index - 1) % 10}`);
  });

  it('reads a value ending in MSH, which node-hl7-client alone takes for a second message', () => {
    const message = parseHl7('MSH|^~\\&|A|FACMSH|C|D|20250101||ADT^A01|1|P|2.5\rPID|1||M1||Doe^Jane\rNTE|1||see MSH|x');
    expect(message.header.get(4)).toBe('FACMSH');
    expect(message.segment('NTE')!.get(3)).toBe('see MSH');
  });

  it('refuses what is not HL7, and HL7 it cannot read', () => {
    for (const text of ['', 'hello', '{"message":"x"}', 'PID|1||x', 'MSH']) {
      expect(looksLikeHl7(text)).toBe(false);
      expect(() => parseHl7(text)).toThrow(NotHl7Error);
    }
    expect(() => parseHl7('MSH|^~|A')).toThrow(UnreadableHl7Error);
    expect(() => parseHl7('MSH|^^\\&|A')).toThrow(UnreadableHl7Error);
    expect(() => parseHl7('MSH|^~\\&|A|B|C|D|1||ADT^A01|1|P|2.5\rMSH|^~\\&|A|B|C|D|1||ADT^A01|2|P|2.5')).toThrow(UnreadableHl7Error);
  });
});
