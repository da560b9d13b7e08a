import type { Address, CodeableConcept, Coding, ContactPoint, HumanName, Identifier, Reference } from 'fhir/r4';
import type { Hl7Repetition } from './parse';

/**
 * HL7 v2 data types to FHIR R4 data types, after the HL7 v2-to-FHIR IG's datatype maps (CWE →
 * CodeableConcept, CX → Identifier, XPN → HumanName, XAD → Address, XTN → ContactPoint, DTM →
 * dateTime/instant, XCN → Reference). Empty input gives undefined, so callers can drop the element.
 */

/** Where an HL7 code system name (CWE.3, HD namespace) is known in FHIR. */
const CODE_SYSTEMS: Record<string, string> = {
  LN: 'http://loinc.org',
  LOINC: 'http://loinc.org',
  SCT: 'http://snomed.info/sct',
  SNM: 'http://snomed.info/sct',
  SNOMEDCT: 'http://snomed.info/sct',
  CVX: 'http://hl7.org/fhir/sid/cvx',
  MVX: 'http://hl7.org/fhir/sid/mvx',
  CPT: 'http://www.ama-assn.org/go/cpt',
  C4: 'http://www.ama-assn.org/go/cpt',
  HCPCS: 'https://www.cms.gov/Medicare/Coding/HCPCSReleaseCodeSets',
  I10: 'http://hl7.org/fhir/sid/icd-10-cm',
  I10C: 'http://hl7.org/fhir/sid/icd-10-cm',
  ICD10CM: 'http://hl7.org/fhir/sid/icd-10-cm',
  RXNORM: 'http://www.nlm.nih.gov/research/umls/rxnorm',
  RXN: 'http://www.nlm.nih.gov/research/umls/rxnorm',
  NDC: 'http://hl7.org/fhir/sid/ndc',
  UCUM: 'http://unitsofmeasure.org',
  NPI: 'http://hl7.org/fhir/sid/us-npi',
  ISO639: 'urn:ietf:bcp:47',
};

/** A code system named in a message but unknown here: kept, under the sandbox's own namespace. */
const LOCAL_SYSTEM = 'https://sandbox.example/fhir/CodeSystem/v2-local/';
/** Identifier namespaces (HD.1) without a universal id. */
const LOCAL_IDENTIFIER_SYSTEM = 'https://sandbox.example/fhir/sid/v2/';

export function codeSystemUri(name: string): string | undefined {
  if (name === '') return undefined;
  const known = CODE_SYSTEMS[name.toUpperCase()];
  if (known) return known;
  const table = /^HL7(\d{4})$/i.exec(name);
  if (table) return `http://terminology.hl7.org/CodeSystem/v2-${table[1]}`;
  if (/^(https?:|urn:)\S+$/.test(name)) return name;
  return `${LOCAL_SYSTEM}${encodeURIComponent(name)}`;
}

/** A coding from an HL7 v2 table (`v2-0203` etc.). */
export const v2Coding = (table: string, code: string, display?: string): Coding => ({
  system: `http://terminology.hl7.org/CodeSystem/v2-${table}`,
  code,
  ...(display ? { display } : {}),
});

function coding(code: string, display: string, system: string, defaultSystem?: string): Coding | undefined {
  if (code === '' && display === '') return undefined;
  const uri = codeSystemUri(system) ?? defaultSystem;
  return { ...(uri ? { system: uri } : {}), ...(code ? { code } : {}), ...(display ? { display } : {}) };
}

/** CWE/CE/CNE → CodeableConcept: the primary and alternate codings, and the original text (CWE.9). */
export function codeableConcept(value: Hl7Repetition, defaultSystem?: string): CodeableConcept | undefined {
  const codings = [coding(value.get(1), value.get(2), value.get(3), defaultSystem), coding(value.get(4), value.get(5), value.get(6))].filter(
    (c): c is Coding => c !== undefined,
  );
  const text = value.get(9) || value.get(2) || undefined;
  if (codings.length === 0 && !text) return undefined;
  return { ...(codings.length ? { coding: codings } : {}), ...(text ? { text } : {}) };
}

/**
 * Identifier namespaces with a FHIR system of their own, by HD.1 or identifier type code: NPIs under
 * us-npi (the v2-to-FHIR IG's NamingSystem for the US National Provider Identifier), SSNs under us-ssn.
 */
const KNOWN_IDENTIFIER_SYSTEMS: Record<string, string> = {
  NPI: 'http://hl7.org/fhir/sid/us-npi',
  SSA: 'http://hl7.org/fhir/sid/us-ssn',
  SS: 'http://hl7.org/fhir/sid/us-ssn',
  SSN: 'http://hl7.org/fhir/sid/us-ssn',
};

/** HD (namespace^universal id^type) → an identifier system URI; `idType` (CX.5/XCN.13) may name it too (NPI, SS). */
export function identifierSystem(namespace: string, universalId: string, type: string, idType = ''): string | undefined {
  if (universalId === '2.16.840.1.113883.4.6' || (!universalId && KNOWN_IDENTIFIER_SYSTEMS[namespace.toUpperCase()]))
    return KNOWN_IDENTIFIER_SYSTEMS[namespace.toUpperCase()] ?? KNOWN_IDENTIFIER_SYSTEMS.NPI;
  if (!universalId && !namespace && KNOWN_IDENTIFIER_SYSTEMS[idType]) return KNOWN_IDENTIFIER_SYSTEMS[idType];
  if (universalId) {
    if (/^\d+(\.\d+)+$/.test(universalId)) return `urn:oid:${universalId}`;
    if (type === 'UUID' && /^[0-9a-fA-F-]{36}$/.test(universalId)) return `urn:uuid:${universalId.toLowerCase()}`;
    if (/^(https?:|urn:)\S+$/.test(universalId)) return universalId;
    // A universal id that is none of these is still a name for the namespace.
    return `${LOCAL_IDENTIFIER_SYSTEM}${encodeURIComponent(universalId)}`;
  }
  return namespace ? `${LOCAL_IDENTIFIER_SYSTEM}${encodeURIComponent(namespace)}` : undefined;
}

/** CX (id^check^scheme^assigning authority (HD)^type code) → Identifier. */
export function identifier(value: Hl7Repetition): Identifier | undefined {
  const id = value.get(1);
  if (!id) return undefined;
  const type = value.get(5);
  const system = identifierSystem(value.get(4, 1), value.get(4, 2), value.get(4, 3), type);
  return { ...(type ? { type: { coding: [v2Coding('0203', type)] } } : {}), ...(system ? { system } : {}), value: id };
}

/** EI (entity id^namespace^universal id^type) → Identifier, with a v2-0203 type when given. */
export function entityIdentifier(value: Hl7Repetition, type?: string): Identifier | undefined {
  const id = value.get(1);
  if (!id) return undefined;
  const system = identifierSystem(value.get(2), value.get(3), value.get(4));
  return { ...(type ? { type: { coding: [v2Coding('0203', type)] } } : {}), ...(system ? { system } : {}), value: id };
}

const NAME_USE: Record<string, HumanName['use']> = {
  L: 'official',
  D: 'usual',
  M: 'maiden',
  N: 'nickname',
  A: 'anonymous',
  S: 'anonymous',
  B: 'official',
  C: 'old',
  T: 'temp',
  U: 'usual',
};

/** XPN (family^given^middle^suffix^prefix^degree^^type) → HumanName. */
export function humanName(value: Hl7Repetition): HumanName | undefined {
  const family = value.get(1, 1);
  const given = [value.get(2), value.get(3)].filter(Boolean);
  if (!family && given.length === 0) return undefined;
  const use = NAME_USE[value.get(7)];
  const suffix = [value.get(4), value.get(6)].filter(Boolean);
  return {
    ...(use ? { use } : {}),
    ...(family ? { family } : {}),
    ...(given.length ? { given } : {}),
    ...(value.get(5) ? { prefix: [value.get(5)] } : {}),
    ...(suffix.length ? { suffix } : {}),
  };
}

const ADDRESS_USE: Record<string, Address['use']> = { H: 'home', B: 'work', O: 'work', C: 'temp', BA: 'billing', M: 'home' };

/** XAD (street^other^city^state^zip^country^type) → Address. */
export function address(value: Hl7Repetition): Address | undefined {
  const line = [value.get(1, 1), value.get(2)].filter(Boolean);
  const parts = { city: value.get(3), state: value.get(4), postalCode: value.get(5), country: value.get(6) };
  if (line.length === 0 && !Object.values(parts).some(Boolean)) return undefined;
  const use = ADDRESS_USE[value.get(7)];
  return {
    ...(use ? { use } : {}),
    ...(value.get(7) === 'M' ? { type: 'postal' as const } : {}),
    ...(line.length ? { line } : {}),
    ...Object.fromEntries(Object.entries(parts).filter(([, part]) => part !== '')),
  };
}

/** XTN (number^use^equipment^email^…^unformatted number (12)) → ContactPoint. */
export function contactPoint(value: Hl7Repetition, defaultUse: ContactPoint['use']): ContactPoint | undefined {
  const email = value.get(4);
  const equipment = value.get(3);
  if (email || value.get(2) === 'NET' || equipment === 'Internet') {
    return email ? { system: 'email', value: email, use: defaultUse } : undefined;
  }
  const number = value.get(12) || value.get(1) || [value.get(5), value.get(6), value.get(7)].filter(Boolean).join('');
  if (!number) return undefined;
  const use = equipment === 'CP' ? 'mobile' : value.get(2) === 'WPN' ? 'work' : defaultUse;
  return { system: equipment === 'FX' ? 'fax' : 'phone', value: number, use };
}

/** XCN (id^family^given^middle^suffix^prefix) → a Reference by identifier and display. */
export function practitionerReference(value: Hl7Repetition): Reference | undefined {
  const id = value.get(1);
  const name = [value.get(6), value.get(3), value.get(4), value.get(2, 1)].filter(Boolean).join(' ');
  if (!id && !name) return undefined;
  const system = identifierSystem(value.get(9, 1), value.get(9, 2), value.get(9, 3), value.get(13));
  return {
    type: 'Practitioner',
    ...(id ? { identifier: { ...(system ? { system } : {}), value: id } } : {}),
    ...(name ? { display: name } : {}),
  };
}

const DTM = /^(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\.\d{1,4})?([+-]\d{4})?$/;

/**
 * DTM → FHIR dateTime at the precision sent. A time without an offset takes `defaultOffset`
 * (MSH-7's, else UTC), since FHIR requires a zone once hours are given.
 */
export function dateTime(value: string, defaultOffset = '+0000'): string | undefined {
  const match = DTM.exec(value);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction, offset] = match;
  if (!isRealInstant(match)) return undefined;
  if (!month) return year;
  if (!day) return `${year}-${month}`;
  if (!hour) return `${year}-${month}-${day}`;
  const zone = offset ?? defaultOffset;
  const fhirZone = zone === '+0000' || zone === '-0000' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  return `${year}-${month}-${day}T${hour}:${minute ?? '00'}:${second ?? '00'}${fraction ?? ''}${fhirZone}`;
}

/** Whether the parts of a DTM name a real calendar instant (no 13th month, no 31 April, no 25 o'clock). */
function isRealInstant([, year, month, day, hour, minute, second, , offset]: RegExpExecArray): boolean {
  if (year === '0000') return false;
  if (month !== undefined && (Number(month) < 1 || Number(month) > 12)) return false;
  if (day !== undefined && (Number(day) < 1 || Number(day) > new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate())) return false;
  if (hour !== undefined && Number(hour) > 23) return false;
  if (minute !== undefined && Number(minute) > 59) return false;
  if (second !== undefined && Number(second) > 59) return false;
  return offset === undefined || (Number(offset.slice(1, 3)) <= 14 && Number(offset.slice(3)) <= 59);
}

/** DTM → FHIR instant (full precision: a bare date is midnight). */
export function instant(value: string, defaultOffset = '+0000'): string | undefined {
  const match = DTM.exec(value);
  if (!match?.[3]) return undefined;
  return dateTime(match[4] ? value : `${value.slice(0, 8)}000000${match[8] ?? ''}`, defaultOffset);
}

/** DT/DTM → FHIR date. */
export function date(value: string): string | undefined {
  const full = dateTime(value.slice(0, 8));
  return full;
}

/** A number as sent (NM), or undefined when empty or not a number. */
export function decimal(value: string): number | undefined {
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(value)) return undefined;
  return Number(value);
}

/** Minutes between two FHIR instants. */
export function addMinutes(start: string, minutes: number): string {
  return new Date(new Date(start).getTime() + minutes * 60_000).toISOString().replace('.000Z', 'Z');
}
