import type {
  AllergyIntolerance,
  Appointment,
  Bundle,
  Condition,
  Coverage,
  DiagnosticReport,
  DocumentReference,
  Encounter,
  FhirResource,
  Immunization,
  MedicationAdministration,
  MedicationRequest,
  MessageHeader,
  Observation,
  Patient,
  Procedure,
  Provenance,
  RelatedPerson,
  ServiceRequest,
  Specimen,
} from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { processHl7 } from '../../hl7/process';
import { fhirErrors } from '../support/fhir-validator';

/**
 * Segment maps checked fact by fact against the HL7 v2-to-FHIR IG's rules
 * (http://hl7.org/fhir/uv/v2mappings: segment maps, data type maps, ConceptMaps), on synthetic
 * messages written for the test. Pure: parse, check and map in process.
 */

const msh = (type: string, version = '2.5.1', control = 'MAP1') =>
  `MSH|^~\\&|SYNTHETIC-EHR|LAKESIDE|SANDBOX|SYNTHETIC|20250301101500-0500||${type}|${control}|P|${version}`;
const PID =
  'PID|1|EXT77^^^OLDSYS|SYN10001^^^SANDBOX^MR~9876^^^^PI|ALT55^^^CLINIC|Testperson^Ada^Q^^Dr^^L~Sample^Ada^^^^^M|Mockwell^Bea|19800517|F|||1 Maple St^^Lakeside^WA^98001^USA^H||^PRN^PH^^1^555^0100001|||M||ACC123|999-45-6789|D1234567^WA^20300101';

/** Maps `segments` (MSH first) leniently and returns the Bundle, after checking it against base R4 (schema, cardinalities, invariants). */
function bundleOf(...segments: string[]): Bundle {
  const outcome = processHl7(segments.join('\r'));
  if (outcome.kind !== 'acknowledged' || !outcome.bundle) throw new Error(`not mapped: ${outcome.ack.er7}`);
  expect(outcome.ack.code).toBe('AA');
  expect(fhirErrors(outcome.bundle)).toEqual([]);
  return outcome.bundle;
}
const all = <T extends FhirResource>(bundle: Bundle, type: T['resourceType']) =>
  bundle.entry!.map((entry) => entry.resource!).filter((resource) => resource.resourceType === type) as T[];
const one = <T extends FhirResource>(bundle: Bundle, type: T['resourceType']) => all<T>(bundle, type)[0]!;

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
      // A licence number has no synthetic range: the privacy guard masks it (hl7/privacy.ts), keeping the last 4.
      {
        type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'DL' }] },
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

describe('PV1/PV2 → Encounter', () => {
  const encounterOf = (trigger: string, pv1: string, ...more: string[]) =>
    one<Encounter>(bundleOf(msh(`ADT^${trigger}^ADT_A01`), `EVN|${trigger}|20250301`, PID, pv1, ...more), 'Encounter');

  it('PV1-2 → class (IG ConceptMap PatientClass: E EMER, I IMP, O AMB, P PRENC)', () => {
    expect(['E', 'I', 'O', 'P'].map((patientClass) => encounterOf('A01', `PV1|1|${patientClass}`).class.code)).toEqual([
      'EMER',
      'IMP',
      'AMB',
      'PRENC',
    ]);
    expect(encounterOf('A01', 'PV1|1|I').class.system).toBe('http://terminology.hl7.org/CodeSystem/v3-ActCode');
  });

  it('status by trigger (A01 in-progress, A03 finished, A04 planned, A05 planned, A11 cancelled, A21 onleave), finished once PV1-45 is sent', () => {
    const statuses = ['A01', 'A03', 'A04', 'A05', 'A11', 'A21'].map((trigger) => encounterOf(trigger, 'PV1|1|I').status);
    expect(statuses).toEqual(['in-progress', 'finished', 'planned', 'planned', 'cancelled', 'onleave']);
    const discharged = encounterOf('A08', `PV1|1|I${'|'.repeat(42)}202502281000|202503011000`);
    expect(discharged.status).toBe('finished');
    expect(discharged.period).toEqual({ start: '2025-02-28T10:00:00-05:00', end: '2025-03-01T10:00:00-05:00' });
  });

  it('PV1-4 → type, PV1-7/8/9/17 → participants ATND/REF/CON/ADM, PV1-19 → visit number, PV2-3 → reason', () => {
    const encounter = encounterOf(
      'A01',
      'PV1|1|I|W1^101^A^LAKESIDE||||1111111111^Cedar^Gus^^^Dr^^^NPI|2222^Maple^Ben|3333^Ridge^Cleo|MED|||||||4444^Brook^Dev||V100^^^LAKESIDE^VN',
      'PV2|||R51^Headache^I10',
    );
    const withType = encounterOf('A01', 'PV1|1|I||E');
    expect(withType.type).toEqual([{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0007', code: 'E' }] }]);
    expect(encounter.participant!.map((participant) => participant.type![0]!.coding![0]!.code)).toEqual(['ATND', 'REF', 'CON', 'ADM']);
    expect(encounter.participant![0]!.individual!.identifier).toEqual({ system: 'http://hl7.org/fhir/sid/us-npi', value: '1111111111' });
    expect(encounter.identifier![0]).toMatchObject({ value: 'V100', type: { coding: [{ code: 'VN' }] } });
    expect(encounter.reasonCode![0]!.coding![0]).toEqual({ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'R51', display: 'Headache' });
    expect(encounter.location![0]).toMatchObject({ location: { display: 'LAKESIDE W1 101 A' }, status: 'active' });
  });
});

describe('clinical segments of ADT', () => {
  const bundle = bundleOf(
    msh('ADT^A01^ADT_A01'),
    'EVN|A01|20250301101500|||OP1^Willow^Hana',
    PID,
    'NK1|1|Testperson^Ben|SPO^Spouse^HL70063|1 Maple St^^Lakeside^WA|^PRN^PH^^1^555^0100002',
    'PV1|1|I|W1^101^A',
    'AL1|1|DA|70618^Penicillin^RXNORM|SV|Hives~Wheezing|20200101',
    'IAM|1|FA|256349002^Peanut^SCT|MO|Rash||ALG1^LAKESIDE|||||||||||A',
    'DG1|1||I10^Essential hypertension^I10||20250301|A||||||||||5555^Cedar^Gus',
    'PR1|1||80146002^Appendectomy^SCT||202503011200||45||||6666^Ridge^Cleo',
    'GT1|1|G1^^^SANDBOX|Testperson^Ben||1 Maple St^^Lakeside^WA|^PRN^PH^^1^555^0100002||19780101|M||SPO',
    'IN1|1|PLAN1^Gold|PAYER7^^^SANDBOX|Alderpeak Health||||GRP9|Group Nine|||20250101|20251231',
    `IN2||999-45-6789${'|'.repeat(70)}SPO`,
    'ZPI|1|local^only',
  );

  it('NK1 → RelatedPerson with its relationship; GT1 → a guarantor RelatedPerson', () => {
    const [kin, guarantor] = all<RelatedPerson>(bundle, 'RelatedPerson');
    expect(kin!.relationship![0]!.coding![0]).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v2-0063', code: 'SPO', display: 'Spouse' });
    expect(kin!.name![0]).toMatchObject({ family: 'Testperson', given: ['Ben'] });
    expect(guarantor!.relationship![0]!.coding![0]!.code).toBe('GUAR');
    expect(guarantor).toMatchObject({ gender: 'male', birthDate: '1978-01-01' });
  });

  it('AL1 and IAM → AllergyIntolerance (category by table 0127, criticality by table 0128, reactions)', () => {
    const [drug, food] = all<AllergyIntolerance>(bundle, 'AllergyIntolerance');
    expect(drug).toMatchObject({ category: ['medication'], criticality: 'high', recordedDate: '2020-01-01' });
    expect(drug!.code!.coding![0]).toEqual({ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '70618', display: 'Penicillin' });
    expect(drug!.reaction!.map((reaction) => reaction.manifestation[0]!.text)).toEqual(['Hives', 'Wheezing']);
    expect(food).toMatchObject({ category: ['food'], criticality: 'low' });
    expect(food!.identifier![0]!.value).toBe('ALG1');
  });

  it('DG1 → Condition (encounter diagnosis), named on the Encounter; PR1 → Procedure', () => {
    const condition = one<Condition>(bundle, 'Condition');
    expect(condition.code!.coding![0]).toEqual({ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'I10', display: 'Essential hypertension' });
    expect(condition.category![0]!.coding![0]!.code).toBe('encounter-diagnosis');
    expect(condition.onsetDateTime).toBe('2025-03-01');
    expect(condition.recorder!.display).toBe('Gus Cedar');
    const conditionUrl = bundle.entry!.find((entry) => entry.resource === condition)!.fullUrl;
    expect(one<Encounter>(bundle, 'Encounter').diagnosis).toEqual([{ condition: { reference: conditionUrl } }]);
    const procedure = one<Procedure>(bundle, 'Procedure');
    expect(procedure).toMatchObject({
      status: 'completed',
      performedPeriod: { start: '2025-03-01T12:00:00-05:00', end: '2025-03-01T17:45:00Z' },
    });
    expect(procedure.code!.coding![0]!.system).toBe('http://snomed.info/sct');
  });

  it('IN1/IN2 → Coverage with payer, period, group and the relationship IN2-72 gives', () => {
    const coverage = one<Coverage>(bundle, 'Coverage');
    expect(coverage.payor[0]).toMatchObject({ display: 'Alderpeak Health', identifier: { value: 'PAYER7' } });
    expect(coverage.period).toEqual({ start: '2025-01-01', end: '2025-12-31' });
    expect(coverage.class![0]).toMatchObject({ value: 'GRP9', name: 'Group Nine' });
    expect(coverage.relationship!.coding![0]!.code).toBe('spouse');
  });

  it('EVN → Provenance of the message’s focus; unknown Z-segments are left out', () => {
    const provenance = one<Provenance>(bundle, 'Provenance');
    expect(provenance.activity!.coding![0]).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v2-0003', code: 'A01' });
    expect(provenance.recorded).toBe('2025-03-01T10:15:00-05:00');
    expect(provenance.agent[0]!.who!.display).toBe('Hana Willow');
    const header = one<MessageHeader>(bundle, 'MessageHeader');
    expect(provenance.target).toEqual(header.focus!.map((focus) => ({ reference: focus.reference })));
    expect(JSON.stringify(bundle)).not.toContain('local');
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

describe('orders and results', () => {
  const result = bundleOf(
    msh('ORU^R01^ORU_R01'),
    PID,
    'ORC|RE|PL100^EHR|FL200^LAB||CM',
    'OBR|1|PL100^EHR|FL200^LAB|24331-1^Lipid panel^LN|||202503010800|||||||||||||||202503011000|||F',
    'TQ1|1||||||202503010800|202503010900|S',
    'OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL^mg/dL^UCUM|<200|N|||F',
    'NTE|1||Fasting sample',
    'OBX|2|ST|8251-1^Comment^LN||Lipemic||||||C',
    'OBX|3|CWE|882-1^ABO+Rh^LN||278149003^A Rh(D) positive^SCT||||||P',
    'OBX|4|DT|21112-8^Birth date^LN||19800517||||||F',
    'OBX|5|TM|8302-2^Time^LN||0930||||||A',
    'OBX|6|NM|8480-6^Systolic BP^LN||120~118|mm[Hg]^mmHg^UCUM|||||F',
    'OBX|7|SN|5778-6^Titer^LN||^1^:^128||||||X',
    'OBX|8||8251-1^Note^LN||text without a type',
    'SPM|1|SP1^LAB||119297000^Blood^SCT|||||||||||||202503010805',
  );

  it('ORC/OBR → ServiceRequest: ORC-5 status (CM → completed), placer and filler ids, TQ1 timing and priority', () => {
    const order = one<ServiceRequest>(result, 'ServiceRequest');
    expect(order.status).toBe('completed');
    expect(order.identifier!.map((id) => [id.type!.coding![0]!.code, id.value])).toEqual([
      ['PLAC', 'PL100'],
      ['FILL', 'FL200'],
    ]);
    expect(order.occurrencePeriod).toEqual({ start: '2025-03-01T08:00:00-05:00', end: '2025-03-01T09:00:00-05:00' });
    expect(order.priority).toBe('stat');
    const status = (orc5: string) =>
      one<ServiceRequest>(
        bundleOf(msh('ORM^O01^ORM_O01', '2.3'), PID, `ORC|NW|PL1||||${orc5}`.replace('||||', `|||${orc5}|`), 'OBR|1|PL1||80061^Lipid^C4'),
        'ServiceRequest',
      ).status;
    expect(['CA', 'HD', 'IP', 'DC', ''].map((orc5) => status(orc5))).toEqual(['revoked', 'on-hold', 'active', 'revoked', 'active']);
  });

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

  it('RXO → MedicationRequest (OMP and RDE without RXE); RXE → MedicationRequest', () => {
    const ordered = one<MedicationRequest>(
      bundleOf(msh('OMP^O09^OMP_O09'), PID, 'ORC|NW|RX1^EHR', 'RXO|860975^Metformin 500 MG^RXNORM|1||TAB^tablet|||||||90||3', 'RXR|PO^Oral^HL70162'),
      'MedicationRequest',
    );
    expect(ordered).toMatchObject({ status: 'active', intent: 'order', dispenseRequest: { numberOfRepeatsAllowed: 3, quantity: { value: 90 } } });
    expect(ordered.medicationCodeableConcept!.coding![0]).toMatchObject({ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '860975' });
    expect(ordered.dosageInstruction![0]!.route!.coding![0]!.code).toBe('PO');
    const encoded = all<MedicationRequest>(
      bundleOf(msh('RDE^O11^RDE_O11'), PID, 'ORC|NW|RX2^EHR', 'RXO|860975^Metformin^RXNORM|1', 'RXE||860975^Metformin ER^RXNORM|1||TAB||||90'),
      'MedicationRequest',
    );
    expect(encoded).toHaveLength(1);
    expect(encoded[0]!.medicationCodeableConcept!.coding![0]!.display).toBe('Metformin ER');
  });

  it('RXA → Immunization in VXU, MedicationAdministration elsewhere (RAS)', () => {
    const immunization = one<Immunization>(
      bundleOf(
        msh('VXU^V04^VXU_V04'),
        PID,
        'ORC|RE',
        'RXA|0|1|20250301||208^COVID-19 vaccine^CVX|0.3|mL^mL^UCUM||00||||||LOT9||PFR^Pfizer^MVX|||CP',
        'RXR|IM^Intramuscular^HL70162',
      ),
      'Immunization',
    );
    expect(immunization).toMatchObject({ status: 'completed', occurrenceDateTime: '2025-03-01', lotNumber: 'LOT9', primarySource: true });
    expect(immunization.vaccineCode.coding![0]).toMatchObject({ system: 'http://hl7.org/fhir/sid/cvx', code: '208' });
    expect(immunization.manufacturer!.identifier).toEqual({ system: 'http://hl7.org/fhir/sid/mvx', value: 'PFR' });
    const administration = one<MedicationAdministration>(
      bundleOf(msh('RAS^O17^RAS_O17'), PID, 'ORC|RE', 'RXA|0|1|202503011000|202503011010|313782^Acetaminophen 325 MG^RXNORM|2|TAB'),
      'MedicationAdministration',
    );
    expect(administration).toMatchObject({
      status: 'completed',
      effectivePeriod: { start: '2025-03-01T10:00:00-05:00', end: '2025-03-01T10:10:00-05:00' },
      dosage: { dose: { value: 2, unit: 'TAB' } },
    });
  });
});

describe('scheduling and documents', () => {
  it('SCH/AIS/AIG/AIL/AIP → Appointment, status from SCH-25 else the trigger', () => {
    const bundle = bundleOf(
      msh('SIU^S14^SIU_S12'),
      'SCH|AP1^EHR|AF1^SCHED|||||Checkup^Annual checkup|ROUTINE|||||||||||||||||Pending',
      PID,
      'AIS|1||99213^Office visit^C4|202503021000|||30|MIN',
      'AIG|1||ROOM3^Exam room 3',
      'AIL|1||CL1^^^LAKESIDE',
      'AIP|1||7777^Cedar^Gus^^^Dr',
    );
    const appointment = one<Appointment>(bundle, 'Appointment');
    expect(appointment).toMatchObject({ status: 'pending', start: '2025-03-02T10:00:00-05:00', end: '2025-03-02T15:30:00Z', minutesDuration: 30 });
    expect(appointment.participant.map((participant) => participant.actor!.type ?? participant.actor!.display)).toEqual([
      'Ada Q Testperson',
      'Practitioner',
      'Location',
      'Exam room 3',
    ]);
    const rescheduled = one<Appointment>(bundleOf(msh('SIU^S17^SIU_S12'), 'SCH|AP2^EHR', PID, 'AIS|1||99213|202503021000'), 'Appointment');
    expect(rescheduled.status).toBe('entered-in-error');
  });

  it('TXA → DocumentReference for any MDM trigger (T01 without content, T02 with)', () => {
    const document = one<DocumentReference>(
      bundleOf(
        msh('MDM^T01^MDM_T01'),
        'EVN|T01|20250301',
        PID,
        'PV1|1|O',
        'TXA|1|DS^Discharge summary|TX|202503011000|8888^Cedar^Gus|||||||DOC77^EHR|||||AU',
      ),
      'DocumentReference',
    );
    expect(document).toMatchObject({
      status: 'current',
      docStatus: 'final',
      masterIdentifier: { value: 'DOC77' },
      date: '2025-03-01T10:00:00-05:00',
    });
    expect(document.type!.coding![0]).toMatchObject({ system: 'http://terminology.hl7.org/CodeSystem/v2-0270', code: 'DS' });
  });
});
