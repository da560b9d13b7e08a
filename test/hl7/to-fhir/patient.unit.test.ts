import type { Encounter, MessageHeader, Patient, RelatedPerson } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { loadFhirStore } from '../../../fixtures/store';
import { renderTemplate } from '../../../hl7/templates';
import { admission, all, bundleOf, mapped, msh, one, PID } from './messages';

/** hl7/to-fhir/patient.ts: PID, PD1, MRG, NK1. */

describe('PID → Patient', () => {
  const patient = one<Patient>(bundleOf(msh('ADT^A28^ADT_A05'), 'EVN|A28|20250301', PID, 'PV1|1|N'), 'Patient');

  it('takes names with their use, the birth date and the administrative sex', () => {
    expect(patient.name).toEqual([
      { use: 'official', family: 'Testperson', given: ['Ada', 'Q'], prefix: ['Dr'] },
      { use: 'maiden', family: 'Sample', given: ['Ada'] },
    ]);
    expect(patient.birthDate).toBe('1980-05-17');
    expect(patient.gender).toBe('female');
  });

  it('takes every identifier: PID-2, each PID-3, PID-4, the SSN (PID-19) under us-ssn and the driver’s licence (PID-20)', () => {
    expect(patient.identifier).toEqual([
      { system: 'https://sandbox.example/fhir/sid/v2/OLDSYS', value: 'EXT77' },
      {
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' }] },
        system: 'https://sandbox.example/fhir/sid/v2/SANDBOX',
        value: 'SYN10001',
      },
      { type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'PI' }] }, value: '9876' },
      { system: 'https://sandbox.example/fhir/sid/v2/CLINIC', value: 'ALT55' },
      {
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'SS' }] },
        system: 'http://hl7.org/fhir/sid/us-ssn',
        value: '999-45-6789',
      },
      {
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'DL' }] },
        // A licence number has no synthetic range: the privacy guard masks it (hl7/privacy.ts), keeping the last 4.
        value: 'XXXX4567',
        period: { end: '2030-01-01' },
      },
    ]);
  });

  it('keeps a partial birth date at its precision and maps sex through the IG’s ConceptMap (A, N, O → other; U → unknown)', () => {
    const sexOf = (sex: string, birth = '19800517') =>
      one<Patient>(bundleOf(msh('ADT^A31^ADT_A05'), `PID|1||SYN1^^^SANDBOX^MR||Demo^Finn||${birth}|${sex}`), 'Patient');
    expect(sexOf('M', '1980').birthDate).toBe('1980');
    expect(sexOf('M', '198005').birthDate).toBe('1980-05');
    expect(['A', 'N', 'O', 'U', 'M'].map((sex) => sexOf(sex).gender)).toEqual(['other', 'other', 'other', 'unknown', 'male']);
  });

  it('PD1-4 → generalPractitioner, an NPI under http://hl7.org/fhir/sid/us-npi', () => {
    const bundle = bundleOf(msh('ADT^A31^ADT_A05'), PID, 'PD1|||Lakeside Clinic|1234567893^Cedar^Gus^^^Dr^^^NPI');
    expect(one<Patient>(bundle, 'Patient').generalPractitioner).toEqual([
      { type: 'Practitioner', identifier: { system: 'http://hl7.org/fhir/sid/us-npi', value: '1234567893' }, display: 'Dr Gus Cedar' },
      { type: 'Organization', display: 'Lakeside Clinic' },
    ]);
  });
});

describe('MRG → Patient.link (merges)', () => {
  it.each(['ADT^A40^ADT_A39', 'ADT^A34^ADT_A30', 'ADT^A18^ADT_A18'])('%s links the prior record to the surviving one', (type) => {
    const bundle = bundleOf(msh(type), `EVN|${type.slice(4, 7)}|20250301`, PID, 'MRG|SYN0999^^^SANDBOX^MR');
    const [survivor, prior] = all<Patient>(bundle, 'Patient');
    expect(prior).toMatchObject({ active: false, identifier: [{ value: 'SYN0999' }], link: [{ type: 'replaced-by' }] });
    expect(survivor!.link).toEqual([{ other: { reference: bundle.entry!.find((entry) => entry.resource === prior)!.fullUrl }, type: 'replaces' }]);
  });
});

describe('NK1 → RelatedPerson', () => {
  const bundle = admission();

  it('NK1 → RelatedPerson with its relationship; GT1 → a guarantor RelatedPerson', () => {
    const [kin, guarantor] = all<RelatedPerson>(bundle, 'RelatedPerson');
    expect(kin!.relationship![0]!.coding![0]).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v2-0063', code: 'SPO', display: 'Spouse' });
    expect(kin!.name![0]).toMatchObject({ family: 'Testperson', given: ['Ben'] });
    expect(guarantor!.relationship![0]!.coding![0]!.code).toBe('GUAR');
    expect(guarantor).toMatchObject({ gender: 'male', birthDate: '1978-01-01' });
  });
});

describe('patients in whole messages', () => {
  it('PID → Patient, PV1 → Encounter, NK1 → RelatedPerson, IN1 → Coverage (ADT^A01)', () => {
    const bundle = mapped(renderTemplate('adt-a01')!.er7);
    const world = loadFhirStore().read('Patient', 'syn-pat-0001') as Patient;
    const [patient] = all<Patient>(bundle, 'Patient');
    expect(patient!.name![0]).toMatchObject({ family: world.name![0]!.family, given: world.name![0]!.given, use: 'official' });
    expect(patient!.birthDate).toBe(world.birthDate);
    expect(patient!.gender).toBe(world.gender);
    expect(patient!.identifier![0]).toMatchObject({ system: 'https://sandbox.example/fhir/sid/mrn', value: world.identifier![0]!.value });
    const [encounter] = all<Encounter>(bundle, 'Encounter');
    expect(encounter!.status).toBe('in-progress');
    expect(encounter!.class.code).toBe('IMP');
    expect(encounter!.period!.start).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(encounter!.participant![0]!.individual!.display).toMatch(/^Dr\. /);
    expect(all(bundle, 'RelatedPerson')).toHaveLength(1);
    expect(all(bundle, 'Coverage')).toHaveLength(1);
    const header = all<MessageHeader>(bundle, 'MessageHeader')[0]!;
    expect(header.eventCoding).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v2-0003', code: 'A01' });
  });

  it('MRG → a prior Patient linked both ways with the surviving one (ADT^A40)', () => {
    const [survivor, prior] = all<Patient>(mapped(renderTemplate('adt-a40')!.er7), 'Patient');
    expect(prior!.active).toBe(false);
    expect(prior!.identifier![0]!.value).toMatch(/-OLD$/);
    expect(survivor!.link).toEqual([{ other: { reference: expect.stringMatching(/^urn:uuid:/) }, type: 'replaces' }]);
    expect(prior!.link![0]!.type).toBe('replaced-by');
  });
});
