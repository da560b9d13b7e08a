import type { Bundle, FhirResource } from 'fhir/r4';
import { expect } from 'vitest';
import { processHl7 } from '../../../hl7/process';
import { fhirErrors } from '../../support/fhir-validator';

/**
 * What the family tests of hl7/to-fhir/ share: synthetic messages written for the tests, mapped
 * in process, and ways to pick resources out of the Bundle. Segment maps are checked fact by fact
 * against the HL7 v2-to-FHIR IG's rules (http://hl7.org/fhir/uv/v2mappings: segment maps, data
 * type maps, ConceptMaps).
 */

export const msh = (type: string, version = '2.5.1', control = 'MAP1') =>
  `MSH|^~\\&|SYNTHETIC-EHR|LAKESIDE|SANDBOX|SYNTHETIC|20250301101500-0500||${type}|${control}|P|${version}`;
export const PID =
  'PID|1|EXT77^^^OLDSYS|SYN10001^^^SANDBOX^MR~9876^^^^PI|ALT55^^^CLINIC|Testperson^Ada^Q^^Dr^^L~Sample^Ada^^^^^M|Mockwell^Bea|19800517|F|||1 Maple St^^Lakeside^WA^98001^USA^H||^PRN^PH^^1^555^0100001|||M||ACC123|999-45-6789|D1234567^WA^20300101';

/** Maps `segments` (MSH first) leniently and returns the Bundle, after checking it against base R4 (schema, cardinalities, invariants). */
export function bundleOf(...segments: string[]): Bundle {
  const outcome = processHl7(segments.join('\r'));
  if (outcome.kind !== 'acknowledged' || !outcome.bundle) throw new Error(`not mapped: ${outcome.ack.er7}`);
  expect(outcome.ack.code).toBe('AA');
  expect(fhirErrors(outcome.bundle)).toEqual([]);
  return outcome.bundle;
}

/** Maps a whole message (a template, say) and returns the Bundle. */
export function mapped(text: string): Bundle {
  const outcome = processHl7(text);
  if (outcome.kind !== 'acknowledged' || !outcome.bundle) throw new Error(`not mapped: ${outcome.ack.er7}`);
  return outcome.bundle;
}

export const resources = (bundle: Bundle) => bundle.entry!.map((entry) => entry.resource!);
export const all = <T extends FhirResource>(bundle: Bundle, type: T['resourceType']) =>
  resources(bundle).filter((resource) => resource.resourceType === type) as T[];
export const one = <T extends FhirResource>(bundle: Bundle, type: T['resourceType']) => all<T>(bundle, type)[0]!;

/** An admission carrying a segment of most families (the patient, clinical and financial tests read it). */
export const admission = () =>
  bundleOf(
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

/** A lab result: an order, its report, eight observations of every value type, a note and a specimen (the orders and results tests read it). */
export const labResult = () =>
  bundleOf(
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
