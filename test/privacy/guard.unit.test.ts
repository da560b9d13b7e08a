import { describe, expect, it } from 'vitest';
import { guardHl7 } from '../../hl7/privacy';
import { processHl7 } from '../../hl7/process';
import { guardJson } from '../../privacy/fhir';
import {
  guardDriversLicense,
  guardEmails,
  guardFreeText,
  guardMbi,
  guardSsn,
  isMbi,
  isNeverIssuedSsn,
  isReservedDomain,
  passesLuhn,
} from '../../privacy/guard';

describe('SSNs: only numbers the SSA never issues pass', () => {
  it.each(['999-12-3456', '900-55-1234', '000-12-3456', '666-12-3456', '123-00-4567', '123-45-0000', '987654321'])('%s passes unchanged', (ssn) => {
    expect(guardSsn(ssn)).toEqual({ value: ssn, findings: [] });
  });

  it.each([
    ['123-45-6789', 'XXX-XX-6789'],
    ['123456789', 'XXXXX6789'],
    ['078 05 1120', 'XXX XX 1120'],
  ])('%s is masked to %s', (ssn, masked) => {
    expect(guardSsn(ssn)).toEqual({ value: masked, findings: [{ kind: 'ssn', masked }] });
  });

  it('leaves what is not nine digits alone', () => {
    expect(guardSsn('12345678').findings).toEqual([]);
    expect(guardSsn('ABC-DE-FGHI').findings).toEqual([]);
    expect(isNeverIssuedSsn('899123456')).toBe(false);
  });
});

describe('Medicare Beneficiary Identifiers', () => {
  it.each(['1EG4-TE5-MK73', '1EG4TE5MK73', '9AA0A00AA00', '1eg4te5mk73'])('%s is an MBI', (mbi) => expect(isMbi(mbi)).toBe(true));
  it.each(['0EG4TE5MK73', '1SG4TE5MK73', '1EG4TE5MK7', 'MRN1007919', 'SHM100007211'])('%s is not', (value) => expect(isMbi(value)).toBe(false));
  it('is masked keeping its last 4', () => {
    expect(guardMbi('1EG4-TE5-MK73')).toEqual({ value: 'XXXX-XXX-MK73', findings: [{ kind: 'mbi', masked: 'XXXX-XXX-MK73' }] });
  });
});

describe("driver's licences", () => {
  it('masks any number, keeping the last 4', () => {
    expect(guardDriversLicense('D1234567').value).toBe('XXXX4567');
  });
  it('leaves a value with no digit alone', () => expect(guardDriversLicense('NONE').findings).toEqual([]));
});

describe('payment cards in free text', () => {
  it('checks Luhn', () => {
    expect(passesLuhn('4111111111111111')).toBe(true);
    expect(passesLuhn('4111111111111112')).toBe(false);
  });
  it.each([
    ['Paid with 4111 1111 1111 1111 today', 'Paid with XXXX XXXX XXXX 1111 today'],
    ['card 4111-1111-1111-1111.', 'card XXXX-XXXX-XXXX-1111.'],
    ['amex 378282246310005', 'amex XXXXXXXXXXX0005'],
  ])('%s', (text, masked) => {
    const guarded = guardFreeText(text);
    expect(guarded.value).toBe(masked);
    expect(guarded.findings.map((finding) => finding.kind)).toEqual(['payment_card']);
  });
  it.each([
    'Order 4111111111111112',
    'BP 120 80, HR 72, 1 2 3 4 5 6 7 8 9 10 11 12 13',
    'Accession A4111111111111111',
    'Phone 971-555-0166',
    'Seen 2026-11-27',
  ])('leaves "%s" alone', (text) => {
    expect(guardFreeText(text)).toEqual({ value: text, findings: [] });
  });
  it('masks a dashed SSN and an MBI in free text, not a never-issued SSN', () => {
    const guarded = guardFreeText('SSN 123-45-6789, test 999-12-3456, MBI 1EG4-TE5-MK73.');
    expect(guarded.value).toBe('SSN XXX-XX-6789, test 999-12-3456, MBI XXXX-XXX-MK73.');
    expect(guarded.findings.map((finding) => finding.kind)).toEqual(['ssn', 'mbi']);
  });
});

describe('e-mail addresses', () => {
  it.each(['a@example.com', 'b@mail.example', 'c@x.test', 'd@host.invalid', 'e@box.localhost', 'f@sub.example.org', 'g@EXAMPLE.NET.'])(
    '%s is reserved',
    (address) => {
      expect(guardEmails(`write to ${address}`).findings).toEqual([]);
    },
  );
  it('masks a real address, keeping only its top-level domain', () => {
    expect(guardEmails('write to john.doe@gmail.com.')).toEqual({
      value: 'write to XXXX.XXX@XXXXX.com.',
      findings: [{ kind: 'email', masked: 'XXXX.XXX@XXXXX.com' }],
    });
    expect(isReservedDomain('example.co')).toBe(false);
  });
});

describe('bounded cost', () => {
  it('takes linear time on inputs built to make a scanner backtrack', () => {
    const hostile = [
      '@'.repeat(200_000),
      'a@'.repeat(100_000),
      '1 '.repeat(100_000),
      '1-'.repeat(100_000),
      'A-'.repeat(100_000),
      `${'9'.repeat(200_000)}x`,
    ];
    const started = performance.now();
    for (const text of hostile) guardFreeText(text);
    // Generous: a quadratic scan of these would take minutes.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

const REAL = [
  'MSH|^~\\&|LAB|NORTH|SANDBOX|SYNTHETIC|20260101120000||ADT^A01^ADT_A01|MSG1|P|2.5.1',
  'EVN|A01|20260101120000',
  'PID|1||MRN1^^^SANDBOX^MR~1EG4TE5MK73^^^CMS^MC||Doe^John||19800101|M|||1 Main St^^Town^OR^97000||^NET^Internet^john.doe@gmail.com|||||ACC1|123-45-6789|D1234567^OR^20300101',
  'PV1|1|I',
  'NTE|1||Paid by card 4111 1111 1111 1111',
].join('\r');

describe('the HL7 guard', () => {
  it('masks each real identifier where it stands, one entry per field', () => {
    const guarded = guardHl7(REAL);
    expect(guarded.fields.map((field) => field.field)).toEqual(['PID-3', 'PID-13', 'PID-19', 'PID-20', 'NTE-3']);
    for (const raw of ['1EG4TE5MK73', 'john.doe@gmail.com', '123-45-6789', 'D1234567', '4111 1111 1111 1111'])
      expect(guarded.text).not.toContain(raw);
    expect(guarded.text).toContain('|XXX-XX-6789|XXXX4567^OR^20300101');
  });

  it('answers AA with one W per masked field, and maps only the masked values', () => {
    const outcome = processHl7(REAL);
    expect(outcome.kind === 'acknowledged' && outcome.ack.code).toBe('AA');
    if (outcome.kind !== 'acknowledged') return;
    const privacy = outcome.ack.errors.filter((error) => error.code === 102);
    expect(privacy.map((error) => [error.location, error.severity])).toEqual([
      ['PID^1^3', 'W'],
      ['PID^1^13', 'W'],
      ['PID^1^19', 'W'],
      ['PID^1^20', 'W'],
      ['NTE^1^3', 'W'],
    ]);
    expect(privacy[2]!.message).toContain('masked to XXX-XX-6789');
    const bundle = JSON.stringify(outcome.bundle);
    for (const raw of ['1EG4TE5MK73', 'john.doe@gmail.com', '123-45-6789', 'D1234567', '4111 1111 1111 1111']) {
      expect(bundle).not.toContain(raw);
      expect(outcome.ack.er7).not.toContain(raw);
    }
  });

  it('refuses the message (AE) in strict mode or when the organization refuses real identifiers', () => {
    for (const options of [{ conformance: 'strict' as const }, { privacy: 'refuse' as const }]) {
      const outcome = processHl7(REAL, options);
      expect(outcome.kind === 'acknowledged' && outcome.ack.code).toBe('AE');
      if (outcome.kind !== 'acknowledged') continue;
      expect(outcome.bundle).toBeUndefined();
      expect(outcome.ack.errors.filter((error) => error.code === 102).map((error) => error.location)).toEqual([
        'PID^1^3',
        'PID^1^13',
        'PID^1^19',
        'PID^1^20',
        'NTE^1^3',
      ]);
    }
  });

  it('passes never-issued SSNs and reserved e-mail domains unchanged', () => {
    const synthetic = REAL.replace('123-45-6789', '999-12-3456')
      .replace('john.doe@gmail.com', 'john.doe@mail.example')
      .replace('~1EG4TE5MK73^^^CMS^MC', '')
      .replace('D1234567^OR^20300101', '')
      .replace('Paid by card 4111 1111 1111 1111', 'Paid');
    expect(guardHl7(synthetic)).toEqual({ text: synthetic, fields: [] });
  });
});

describe('the JSON guard (FHIR inputs, demographics)', () => {
  it('judges identifiers by system or type, e-mails anywhere, free text in text elements', () => {
    const patient = {
      resourceType: 'Patient',
      identifier: [
        { system: 'http://hl7.org/fhir/sid/us-ssn', value: '123-45-6789' },
        { system: 'http://hl7.org/fhir/sid/us-ssn', value: '999-12-3456' },
        { system: 'http://hl7.org/fhir/sid/us-mbi', value: '1EG4TE5MK73' },
        { type: { coding: [{ code: 'DL' }] }, value: 'D1234567' },
        { system: 'https://sandbox.example/fhir/sid/mrn', value: 'MRN1007919' },
      ],
      name: [{ family: 'Doe', given: ['John'] }],
      telecom: [{ system: 'email', value: 'john@gmail.com' }],
      birthDate: '1980-01-01',
      text: { div: '<div>card 4111111111111111</div>' },
    };
    const { value, findings } = guardJson(patient, 'Patient');
    expect(findings.map((finding) => [finding.path, finding.kind])).toEqual([
      ['Patient.identifier[0].value', 'ssn'],
      ['Patient.identifier[2].value', 'mbi'],
      ['Patient.identifier[3].value', 'drivers_license'],
      ['Patient.telecom[0].value', 'email'],
      ['Patient.text.div', 'payment_card'],
    ]);
    expect(value.identifier[1]).toBe(patient.identifier[1]);
    expect(value.name).toBe(patient.name);
    expect(JSON.stringify(value)).not.toMatch(/123-45-6789|1EG4TE5MK73|D1234567|john@gmail|4111111111111111/);
  });
});
