import type {
  Appointment,
  Bundle,
  ChargeItem,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  FhirResource,
  Immunization,
  MedicationRequest,
  MessageHeader,
  Observation,
  Patient,
} from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { loadFhirStore } from '../../fixtures/store';
import { SYNTHETIC_TAG } from '../../fixtures/synthetic';
import { parseHl7 } from '../../hl7/parse';
import { processHl7 } from '../../hl7/process';
import { listTemplates, renderTemplate, TEMPLATE_IDS, UnknownPatientError } from '../../hl7/templates';
import { CONTROL_ID_SYSTEM, mapToFhir } from '../../hl7/to-fhir';
import { HL7_TRIGGERS } from '../../hl7/triggers';
import { validateHl7 } from '../../hl7/validate';
import { fhirErrors } from '../support/fhir-validator';

function mapped(text: string): Bundle {
  const outcome = processHl7(text);
  if (outcome.kind !== 'acknowledged' || !outcome.bundle) throw new Error(`not mapped: ${outcome.ack.er7}`);
  return outcome.bundle;
}
const resources = (bundle: Bundle) => bundle.entry!.map((entry) => entry.resource!);
const ofType = <T extends FhirResource>(bundle: Bundle, type: T['resourceType']) =>
  resources(bundle).filter((resource) => resource.resourceType === type) as T[];

/** Every reference inside a resource (`reference` strings, at any depth). */
function referencesIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) referencesIn(item, found);
  else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === 'reference' && typeof child === 'string') found.push(child);
      else referencesIn(child, found);
    }
  }
  return found;
}

describe('templates', () => {
  it('exist for every trigger the sandbox takes', () => {
    const templated = new Set(listTemplates().map((template) => template.message_type.split('^').slice(0, 2).join('^')));
    expect([...templated].sort()).toEqual(HL7_TRIGGERS.map((trigger) => trigger.type).sort());
  });

  it('are delivered under a catalog event, one for every trigger', () => {
    for (const trigger of HL7_TRIGGERS) expect(findEvent(trigger.event), trigger.type).toBeDefined();
  });

  it('are filled from a synthetic patient of the world, and from another one on request', () => {
    const store = loadFhirStore();
    const other = store.patients()[7]!;
    const template = renderTemplate('adt-a01', other.id)!;
    const pid = parseHl7(template.er7).segment('PID')!;
    expect(pid.get(5, 1)).toBe(other.name![0]!.family);
    expect(pid.get(3, 1)).toBe(other.identifier!.find((identifier) => identifier.system?.endsWith('/mrn'))!.value);
    expect(template.patient_id).toBe(other.id);
    expect(() => renderTemplate('adt-a01', 'syn-pat-nobody')).toThrow(UnknownPatientError);
    expect(renderTemplate('nope')).toBeUndefined();
  });

  it.each(TEMPLATE_IDS)('%s validates clean and maps to a valid, synthetic R4 message Bundle', (id) => {
    const template = renderTemplate(id)!;
    const message = parseHl7(template.er7);
    const { type, trigger, problems } = validateHl7(message);
    expect(problems).toEqual([]);
    expect(trigger!.event).toBe(template.event);
    const { bundle } = mapToFhir(message, type!);
    expect(fhirErrors(bundle)).toEqual([]);
    expect(bundle.type).toBe('message');
    expect(bundle.identifier).toEqual({ system: CONTROL_ID_SYSTEM, value: message.header.get(10) });
    expect(bundle.meta?.tag).toContainEqual(SYNTHETIC_TAG);
    expect(resources(bundle)[0]!.resourceType).toBe('MessageHeader');
    const fullUrls = new Set(bundle.entry!.map((entry) => entry.fullUrl));
    for (const resource of resources(bundle)) {
      expect(fhirErrors(resource), `${resource.resourceType} in ${id}`).toEqual([]);
      expect(resource.meta?.tag).toContainEqual(SYNTHETIC_TAG);
      for (const reference of referencesIn(resource)) expect(fullUrls, `${reference} in ${resource.resourceType}`).toContain(reference);
    }
    // The same message maps to the same Bundle (ids derive from the control id).
    expect(mapToFhir(parseHl7(template.er7), type!).bundle).toEqual(bundle);
  });
});

describe('segment maps', () => {
  it('PID → Patient, PV1 → Encounter, NK1 → RelatedPerson, IN1 → Coverage (ADT^A01)', () => {
    const bundle = mapped(renderTemplate('adt-a01')!.er7);
    const world = loadFhirStore().read('Patient', 'syn-pat-0001') as Patient;
    const [patient] = ofType<Patient>(bundle, 'Patient');
    expect(patient!.name![0]).toMatchObject({ family: world.name![0]!.family, given: world.name![0]!.given, use: 'official' });
    expect(patient!.birthDate).toBe(world.birthDate);
    expect(patient!.gender).toBe(world.gender);
    expect(patient!.identifier![0]).toMatchObject({ system: 'https://sandbox.example/fhir/sid/mrn', value: world.identifier![0]!.value });
    const [encounter] = ofType<Encounter>(bundle, 'Encounter');
    expect(encounter!.status).toBe('in-progress');
    expect(encounter!.class.code).toBe('IMP');
    expect(encounter!.period!.start).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(encounter!.participant![0]!.individual!.display).toMatch(/^Dr\. /);
    expect(ofType(bundle, 'RelatedPerson')).toHaveLength(1);
    expect(ofType(bundle, 'Coverage')).toHaveLength(1);
    const header = ofType<MessageHeader>(bundle, 'MessageHeader')[0]!;
    expect(header.eventCoding).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v2-0003', code: 'A01' });
  });

  it('sets the encounter status the trigger means (A03 finished, A04 planned as the IG maps it, A02 with the prior location)', () => {
    expect(ofType<Encounter>(mapped(renderTemplate('adt-a03')!.er7), 'Encounter')[0]!.status).toBe('finished');
    expect(ofType<Encounter>(mapped(renderTemplate('adt-a04')!.er7), 'Encounter')[0]!.status).toBe('planned');
    const transfer = ofType<Encounter>(mapped(renderTemplate('adt-a02')!.er7), 'Encounter')[0]!;
    expect(transfer.location!.map((location) => location.status)).toEqual(['completed', 'active']);
  });

  it('MRG → a prior Patient linked both ways with the surviving one (ADT^A40)', () => {
    const [survivor, prior] = ofType<Patient>(mapped(renderTemplate('adt-a40')!.er7), 'Patient');
    expect(prior!.active).toBe(false);
    expect(prior!.identifier![0]!.value).toMatch(/-OLD$/);
    expect(survivor!.link).toEqual([{ other: { reference: expect.stringMatching(/^urn:uuid:/) }, type: 'replaces' }]);
    expect(prior!.link![0]!.type).toBe('replaced-by');
  });

  it('ORC/OBR/OBX → ServiceRequest, DiagnosticReport and Observations with values, units, ranges and flags (ORU^R01)', () => {
    const bundle = mapped(renderTemplate('oru-r01')!.er7);
    const [report] = ofType<DiagnosticReport>(bundle, 'DiagnosticReport');
    const observations = ofType<Observation>(bundle, 'Observation');
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
    expect(ofType(bundle, 'ServiceRequest')[0]).toMatchObject({ status: 'completed', intent: 'order' });
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
    const patient = ofType<Patient>(bundle, 'Patient')[0]!;
    expect(patient.name![0]).toMatchObject({ family: 'O^Brien', given: ['Ann&Marie'] });
    const [coded, string, ratio, range, numeric] = ofType<Observation>(bundle, 'Observation');
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
    expect(ofType<DiagnosticReport>(bundle, 'DiagnosticReport')[0]!.effectiveDateTime).toBe('2025-03-01T10:00:00-05:00');
    for (const resource of resources(bundle)) expect(fhirErrors(resource)).toEqual([]);
  });

  it("works the same with custom delimiters, whose escapes mean that message's own separators", () => {
    const standard = renderTemplate('oru-r01')!.er7;
    const swap: Record<string, string> = { '|': '!', '^': '`', '~': '*', '\\': '$', '&': '=' };
    for (const character of Object.values(swap)) expect(standard).not.toContain(character);
    const custom = standard.replace(/[|^~\\&]/g, (character) => swap[character]!);
    expect(custom.startsWith('MSH!`*$=!')).toBe(true);
    const a = mapped(standard);
    const b = mapped(custom);
    expect(resources(b).map((resource) => resource.resourceType)).toEqual(resources(a).map((resource) => resource.resourceType));
    expect(ofType<Observation>(b, 'Observation').map((observation) => observation.valueString ?? observation.valueQuantity?.value)).toEqual([
      ...ofType<Observation>(a, 'Observation')
        .slice(0, 2)
        .map((observation) => observation.valueQuantity?.value),
      'Specimen received = processed; results reviewed ! released',
    ]);
    expect(ofType<Patient>(b, 'Patient')[0]!.identifier).toEqual(ofType<Patient>(a, 'Patient')[0]!.identifier);
  });

  it('SCH/AIS → Appointment (booked with start and end; cancelled)', () => {
    const booked = ofType<Appointment>(mapped(renderTemplate('siu-s12')!.er7), 'Appointment')[0]!;
    const world = loadFhirStore()
      .listForPatient('Appointment', 'syn-pat-0001')
      .find((appointment) => (appointment as Appointment).status === 'booked') as Appointment;
    expect(booked).toMatchObject({ status: 'booked', start: world.start, end: world.end, minutesDuration: world.minutesDuration });
    expect(booked.participant.map((participant) => participant.actor?.type ?? 'Patient')).toEqual(['Patient', 'Practitioner', 'Location']);
    expect(ofType<Appointment>(mapped(renderTemplate('siu-s15')!.er7), 'Appointment')[0]!.status).toBe('cancelled');
  });

  it('TXA/OBX → DocumentReference with the text as its attachment (MDM^T02)', () => {
    const document = ofType<DocumentReference>(mapped(renderTemplate('mdm-t02')!.er7), 'DocumentReference')[0]!;
    expect(document.docStatus).toBe('final');
    const text = Buffer.from(document.content[0]!.attachment.data!, 'base64').toString('utf8');
    expect(text).toContain('SYNTHETIC RECORD');
  });

  it('RXA → Immunization, RXE → MedicationRequest, FT1 → ChargeItem', () => {
    const immunization = ofType<Immunization>(mapped(renderTemplate('vxu-v04')!.er7), 'Immunization')[0]!;
    expect(immunization).toMatchObject({ status: 'completed', primarySource: true, doseQuantity: { value: 0.5, code: 'mL' } });
    expect(immunization.vaccineCode.coding![0]!.system).toBe('http://hl7.org/fhir/sid/cvx');
    expect(immunization.route!.coding![0]!.code).toBe('IM');
    const prescription = ofType<MedicationRequest>(mapped(renderTemplate('rde-o11')!.er7), 'MedicationRequest')[0]!;
    expect(prescription.medicationCodeableConcept!.coding![0]).toMatchObject({
      system: 'http://www.nlm.nih.gov/research/umls/rxnorm',
      code: '860975',
    });
    expect(prescription.dispenseRequest).toMatchObject({ numberOfRepeatsAllowed: 3, quantity: { value: 90 } });
    const charge = ofType<ChargeItem>(mapped(renderTemplate('dft-p03')!.er7), 'ChargeItem')[0]!;
    expect(charge.status).toBe('billable');
    expect(charge.code.coding![0]!.system).toBe('http://www.ama-assn.org/go/cpt');
    expect(charge.priceOverride).toMatchObject({ currency: 'USD' });
    expect(charge.priceOverride!.value).toBeGreaterThan(0);
  });
});
