import { describe, expect, it } from 'vitest';
import { addresseeFromText, buildAck } from '../../hl7/ack';
import { isBatchOrStream, splitStream } from '../../hl7/batch';
import { charsetOf, decodeFrame } from '../../hl7/charset';
import { readMsh, withoutMsh8 } from '../../hl7/header';
import { acknowledgementsFor } from '../../hl7/inject';

/** The transport's pure parts: MSH-18, the header read before parsing, batch splitting, the acknowledgements sent. Synthetic text only. */

const msh = (charset: string) => `MSH|^~\\&|LAB|HOSP|RCV|FAC|20250101||ADT^A08|C1|P|2.5.1|||||USA|${charset}`;

describe('MSH-18 character sets', () => {
  it('reads MSH-18 from the first MSH, after a BOM, line ends or a batch header, and only its first repetition', () => {
    expect(charsetOf(Buffer.from(`${msh('8859/1')}\rPID|1`))).toBe('8859/1');
    expect(charsetOf(Buffer.from(`\uFEFF\r\n${msh('unicode utf-8')}`))).toBe('UNICODE UTF-8');
    expect(charsetOf(Buffer.from(`BHS|^~\\&|LAB\r${msh('8859/2~ISO IR87')}`))).toBe('8859/2');
    expect(charsetOf(Buffer.from('MSH|^~\\&|A|B'))).toBe('');
    expect(charsetOf(Buffer.from('PID|1||XMSH|'))).toBe('');
  });

  it('decodes by the set named, and reads an unlabelled or ASCII message as UTF-8 when it is, else as ISO 8859-1', () => {
    expect(decodeFrame(Buffer.from(`${msh('8859/1')}\rPID|1||||Müller`, 'latin1')).text).toContain('Müller');
    expect(decodeFrame(Buffer.from(`${msh('8859/2')}\rPID|1||||X`, 'latin1')).charset).toBe('8859/2');
    expect(decodeFrame(Buffer.concat([Buffer.from(`${msh('8859/2')}\rPID|1||||`), Buffer.from([0xb3])])).text.endsWith('ł')).toBe(true);
    expect(decodeFrame(Buffer.from(`${msh('')}\rPID|1||||Jiménez`, 'utf8')).text).toContain('Jiménez');
    expect(decodeFrame(Buffer.from(`${msh('ASCII')}\rPID|1||||Jiménez`, 'latin1')).text).toContain('Jiménez');
    expect(decodeFrame(Buffer.from(`${msh('NOT-A-SET')}\rPID|1||||Zoë`, 'utf8')).text).toContain('Zoë');
  });
});

describe('the header read before parsing', () => {
  it('reads MSH fields by number, and empties MSH-8 without touching the rest', () => {
    const text = 'MSH|^~\\&|A|B|C^X|D|20250101|sbx_mllp_secret|ADT^A01|C9|P|2.5.1|||AL|NE\rPID|1||sbx_mllp_secret';
    const header = readMsh(text)!;
    expect([header.get(5), header.raw(5), header.get(8), header.get(15), header.get(16), header.get(1)]).toEqual([
      'C',
      'C^X',
      'sbx_mllp_secret',
      'AL',
      'NE',
      '|',
    ]);
    expect(withoutMsh8(text)).toBe('MSH|^~\\&|A|B|C^X|D|20250101||ADT^A01|C9|P|2.5.1|||AL|NE\rPID|1||sbx_mllp_secret');
    expect(readMsh('hello')).toBeUndefined();
    expect(withoutMsh8('hello')).toBe('hello');
  });
});

describe('batches and streams', () => {
  it('tells one message from a batch or a stream by line starts only', () => {
    expect(isBatchOrStream(`${msh('')}\rPID|1||MSH|x`)).toBe(false);
    expect(isBatchOrStream(`\n${msh('')}\n`)).toBe(false);
    expect(isBatchOrStream(`${msh('')}\n${msh('')}`)).toBe(true);
    expect(isBatchOrStream(`FHS|^~\\&|A\r${msh('')}`)).toBe(true);
  });

  it('splits messages at MSH, keeps the file and batch headers, and makes a stray segment a message of its own', () => {
    const stream = splitStream(
      [
        'FHS|^~\\&|LAB|HOSP|||20250101|tok|||F1',
        'BHS|^~\\&|LAB|HOSP|||20250101||||B1',
        'MSH|^~\\&|1',
        'PID|1',
        'MSH|^~\\&|2',
        'BTS|2',
        'PID|stray',
        'FTS|1',
      ].join('\r\n'),
    );
    expect(stream.file).toEqual({ sendingApplication: 'LAB', sendingFacility: 'HOSP', security: 'tok', controlId: 'F1' });
    expect(stream.batch).toMatchObject({ controlId: 'B1', security: '' });
    expect(stream.messages).toEqual(['MSH|^~\\&|1\rPID|1', 'MSH|^~\\&|2', 'PID|stray']);
  });
});

describe('acknowledgements over MLLP', () => {
  const to = addresseeFromText('MSH|^~\\&|LAB|HOSP|RCV|FAC|20250101||ADT^A01|C7|P|2.5.1');
  const codes = (answers: string[]) => answers.map((answer) => answer.split('\r')[1]!.split('|')[1]);

  it('sends what MSH-15/MSH-16 ask for, in order, and a CE (not a CR) for a failure on our side', () => {
    const accepted = buildAck('AA', to, []);
    const refused = buildAck('AR', to, []);
    expect(codes(acknowledgementsFor('', '', accepted, to))).toEqual(['AA']);
    expect(codes(acknowledgementsFor('AL', 'AL', accepted, to))).toEqual(['CA', 'AA']);
    expect(codes(acknowledgementsFor('AL', 'NE', accepted, to))).toEqual(['CA']);
    expect(codes(acknowledgementsFor('ER', 'ER', accepted, to))).toEqual([]);
    expect(codes(acknowledgementsFor('AL', 'NE', refused, to))).toEqual(['CR']);
    expect(codes(acknowledgementsFor('AL', 'NE', refused, to, { onOurSide: true }))).toEqual(['CE']);
    expect(codes(acknowledgementsFor('', '', refused, to, { onOurSide: true }))).toEqual(['AR']);
  });
});
