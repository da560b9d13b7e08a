import type { DiagnosticReport, Observation, Patient, Specimen } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../../hl7/templates';
import { fhirErrors } from '../../support/fhir-validator';
import { all, labResult, mapped, one, resources } from './messages';

/** hl7/to-fhir/results.ts: OBR, OBX, SPM. */

describe('results', () => {
  const result = labResult();

  it('OBR → DiagnosticReport with the placer order number, its results, specimen and status', () => {
    const report = one<DiagnosticReport>(result, 'DiagnosticReport');
    expect(report.identifier!.map((id) => id.value)).toEqual(['PL100', 'FL200']);
    expect(report.status).toBe('final');
    expect(report.result).toHaveLength(8);
    expect(report.specimen).toHaveLength(1);
    expect(one<Specimen>(result, 'Specimen')).toMatchObject({
      type: { coding: [{ code: '119297000' }] },
      collection: { collectedDateTime: '2025-03-01T08:05:00-05:00' },
    });
  });

  it('OBX → Observation: code, value[x] by OBX-2, unit, status by OBX-11, components for a repeated OBX-5, notes from NTE', () => {
    const [nm, st, cwe, dt, tm, repeated, sn, untyped] = all<Observation>(result, 'Observation');
    expect(nm!.code.coding![0]).toEqual({ system: 'http://loinc.org', code: '2093-3', display: 'Cholesterol' });
    expect(nm!.valueQuantity).toEqual({ value: 182, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' });
    expect(nm!.referenceRange![0]!.high!.value).toBe(200);
    expect(nm!.note).toEqual([{ text: 'Fasting sample' }]);
    expect([nm, st, cwe, dt, tm, repeated, sn].map((observation) => observation!.status)).toEqual([
      'final',
      'corrected',
      'preliminary',
      'final',
      'amended',
      'final',
      'cancelled',
    ]);
    expect(st!.valueString).toBe('Lipemic');
    expect(cwe!.valueCodeableConcept!.coding![0]!.code).toBe('278149003');
    expect(dt!.valueDateTime).toBe('1980-05-17');
    expect(tm!.valueTime).toBe('09:30:00');
    expect(repeated!.valueQuantity).toBeUndefined();
    expect(repeated!.component!.map((component) => component.valueQuantity!.value)).toEqual([120, 118]);
    expect(sn!.valueRatio).toEqual({ numerator: { value: 1 }, denominator: { value: 128 } });
    // OBX-2 and OBX-11 missing: the value as text, the status unknown (two warnings on the ACK).
    expect(untyped).toMatchObject({ valueString: 'text without a type', status: 'unknown' });
  });

  it('ORC/OBR/OBX → ServiceRequest, DiagnosticReport and Observations with values, units, ranges and flags (ORU^R01)', () => {
    const bundle = mapped(renderTemplate('oru-r01')!.er7);
    const [report] = all<DiagnosticReport>(bundle, 'DiagnosticReport');
    const observations = all<Observation>(bundle, 'Observation');
    expect(report!.status).toBe('final');
    expect(report!.result).toHaveLength(observations.length);
    const [numeric, structured, text] = observations;
    expect(numeric!.valueQuantity).toMatchObject({ system: 'http://unitsofmeasure.org' });
    expect(typeof numeric!.valueQuantity!.value).toBe('number');
    expect(numeric!.referenceRange![0]!.low!.value).toBeTypeOf('number');
    expect(numeric!.interpretation![0]!.coding![0]!.system).toBe('http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation');
    expect(structured!.valueQuantity).toEqual({
      value: 60,
      comparator: '>',
      unit: 'mL/min/1.73m2',
      system: 'http://unitsofmeasure.org',
      code: 'mL/min/{1.73_m2}',
    });
    expect(structured!.referenceRange![0]!.low!.value).toBe(60);
    // \T\ and \F\ in the message come out decoded.
    expect(text!.valueString).toBe('Specimen received & processed; results reviewed | released');
    expect(all(bundle, 'ServiceRequest')[0]).toMatchObject({ status: 'completed', intent: 'order' });
  });

  it('maps CWE and ST values, SN ranges and ratios, and decodes escapes in every value', () => {
    const text = [
      'MSH|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250301101500-0500||ORU^R01^ORU_R01|ESC1|P|2.5.1',
      'PID|1||M42^^^HOSP^MR||O\\S\\Brien^Ann\\T\\Marie||19700101|F',
      'OBR|1||F1|24331-1^Lipid panel^LN|||202503011000',
      'OBX|1|CWE|882-1^ABO+Rh group^LN||278149003^Blood group A Rh(D) positive^SCT||||||F',
      'OBX|2|ST|8251-1^Comment^LN||Hemolyzed \\E\\ recollect\\X0A\\next||||||F',
      'OBX|3|SN|5778-6^Color^LN||^1^:^128||||||F',
      'OBX|4|SN|2093-3^Cholesterol^LN||^150^-^200|mg/dL^mg/dL^UCUM|||||F',
      'OBX|5|NM|2085-9^HDL^LN||45|mg/dL|40-60|N|||P',
    ].join('\r');
    const bundle = mapped(text);
    const patient = all<Patient>(bundle, 'Patient')[0]!;
    expect(patient.name![0]).toMatchObject({ family: 'O^Brien', given: ['Ann&Marie'] });
    const [coded, string, ratio, range, numeric] = all<Observation>(bundle, 'Observation');
    expect(coded!.valueCodeableConcept!.coding![0]).toEqual({
      system: 'http://snomed.info/sct',
      code: '278149003',
      display: 'Blood group A Rh(D) positive',
    });
    expect(string!.valueString).toBe('Hemolyzed \\ recollect\nnext');
    expect(ratio!.valueRatio).toEqual({ numerator: { value: 1 }, denominator: { value: 128 } });
    expect(range!.valueRange!.low).toMatchObject({ value: 150, code: 'mg/dL' });
    expect(numeric!.status).toBe('preliminary');
    // A time without an offset takes MSH-7's.
    expect(all<DiagnosticReport>(bundle, 'DiagnosticReport')[0]!.effectiveDateTime).toBe('2025-03-01T10:00:00-05:00');
    for (const resource of resources(bundle)) expect(fhirErrors(resource)).toEqual([]);
  });
});
