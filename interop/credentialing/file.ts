import type {
  Bundle,
  CodeableConcept,
  FhirResource,
  Meta,
  Organization,
  Practitioner,
  PractitionerRole,
  Reference,
  VerificationResult,
} from 'fhir/r4';
import { SYSTEM } from '../../fhir/terminology';
import type { FhirStore } from '../../fixtures/store';
import { SYNTHETIC_META } from '../../fixtures/synthetic';

/**
 * A practitioner's credentialing file: the NPPES record, state licenses, DEA registration, board
 * certification, OIG and SAM exclusion checks and Medicare enrollment, each primary-source check as
 * a FHIR R4 VerificationResult, and the overall status. Derived from the world's practitioners
 * alone (no clock, no randomness), so every file is the same on every run; the variations are in
 * VARIATIONS (docs/api/credentialing.md).
 */

export const CREDENTIALING_STATUSES = ['verified', 'in_progress', 'flagged'] as const;
export type CredentialingStatus = (typeof CREDENTIALING_STATUSES)[number];

export const CHECKS = ['npi', 'license', 'dea', 'board_certification', 'oig_exclusion', 'sam_exclusion', 'medicare_enrollment'] as const;
export type Check = (typeof CHECKS)[number];

/** The recredentialing cycle (NCQA): every 36 months. */
export const RECREDENTIALING_MONTHS = 36;

/** Where the world's practitioners differ from a clean file. */
export const VARIATIONS = {
  /** An expired license in a state the practitioner no longer practises in: noted, not flagged. */
  'syn-prac-003': 'expired_secondary_license',
  /** The Oregon license, where they practise, lapsed: flagged. */
  'syn-prac-009': 'expired_license',
  /** On the OIG exclusion list and excluded in SAM: flagged. */
  'syn-prac-012': 'excluded',
  /** The board has not answered yet and Medicare enrollment is pending: in progress. */
  'syn-prac-007': 'in_progress',
  /** A radiologist who does not prescribe: no DEA registration to verify. */
  'syn-prac-011': 'no_dea',
} as const satisfies Record<string, string>;

type Variation = (typeof VARIATIONS)[keyof typeof VARIATIONS];

export interface License {
  state: string;
  number: string;
  type: string;
  status: 'active' | 'expired';
  issued_on: string;
  expires_on: string;
  practice_state: boolean;
}

export interface CredentialingFile {
  practitioner_id: string;
  name: string;
  status: CredentialingStatus;
  reasons: string[];
  notes: string[];
  npi: NppesRecord;
  licenses: License[];
  dea: { number: string; state: string; schedules: string[]; status: 'active'; expires_on: string } | null;
  board_certifications: {
    board: string;
    specialty: string;
    status: 'certified' | 'pending_verification';
    certified_since: string;
    expires_on: string | null;
  }[];
  exclusions: {
    oig_leie: { checked_on: string; excluded: boolean; exclusion_type?: string; exclusion_date?: string; description?: string };
    sam: { checked_on: string; status: 'no_active_exclusion' | 'active_exclusion'; exclusion_program?: string; activated_on?: string };
  };
  medicare: {
    status: 'approved' | 'pending';
    pecos_enrollment_id: string;
    ptan: string | null;
    effective_on: string | null;
    reassigned_to_npi: string;
  };
  verifications: VerificationResult[];
  last_credentialed_on: string;
  recredential_due_on: string;
}

/** The NPPES NPI Registry's record shape (API v2.1), as partners parse it. */
export interface NppesRecord {
  number: string;
  enumeration_type: 'NPI-1';
  basic: {
    first_name: string;
    last_name: string;
    name_prefix?: string;
    credential: string;
    sole_proprietor: 'NO';
    gender: 'F' | 'M';
    enumeration_date: string;
    last_updated: string;
    status: 'A';
  };
  addresses: {
    country_code: 'US';
    country_name: 'United States';
    address_purpose: 'LOCATION' | 'MAILING';
    address_type: 'DOM';
    address_1: string;
    city: string;
    state: string;
    postal_code: string;
    telephone_number: string;
  }[];
  taxonomies: { code: string; taxonomy_group: string; desc: string; state: string; license: string; primary: boolean }[];
  identifiers: never[];
}

function addMonths(date: string, months: number): string {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  const total = year * 12 + (month - 1) + months;
  return `${Math.floor(total / 12)}-${String((total % 12) + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** A DEA number: two letters and seven digits, the last a check digit over the other six. */
export function deaNumber(registrant: string, familyName: string, digits: string): string {
  const d = digits.slice(0, 6).split('').map(Number);
  const check = (d[0]! + d[2]! + d[4]! + 2 * (d[1]! + d[3]! + d[5]!)) % 10;
  return `${registrant}${familyName[0]!.toUpperCase()}${digits.slice(0, 6)}${check}`;
}

export function isValidDeaNumber(value: string): boolean {
  if (!/^[A-Z]{2}\d{7}$/.test(value)) return false;
  const d = value.slice(2).split('').map(Number);
  return (d[0]! + d[2]! + d[4]! + 2 * (d[1]! + d[3]! + d[5]!)) % 10 === d[6];
}

const BOARDS: Record<string, { md: string; do: string; specialty: string }> = {
  '207Q00000X': { md: 'American Board of Family Medicine', do: 'American Osteopathic Board of Family Physicians', specialty: 'Family Medicine' },
  '207R00000X': { md: 'American Board of Internal Medicine', do: 'American Osteopathic Board of Internal Medicine', specialty: 'Internal Medicine' },
  '208000000X': { md: 'American Board of Pediatrics', do: 'American Osteopathic Board of Pediatrics', specialty: 'Pediatrics' },
  '363LF0000X': {
    md: 'American Academy of Nurse Practitioners Certification Board',
    do: 'American Academy of Nurse Practitioners Certification Board',
    specialty: 'Family Nurse Practitioner',
  },
  '207RE0101X': {
    md: 'American Board of Internal Medicine',
    do: 'American Osteopathic Board of Internal Medicine',
    specialty: 'Endocrinology, Diabetes and Metabolism',
  },
  '207RC0000X': {
    md: 'American Board of Internal Medicine',
    do: 'American Osteopathic Board of Internal Medicine',
    specialty: 'Cardiovascular Disease',
  },
  '207X00000X': {
    md: 'American Board of Orthopaedic Surgery',
    do: 'American Osteopathic Board of Orthopedic Surgery',
    specialty: 'Orthopaedic Surgery',
  },
  '2085R0202X': { md: 'American Board of Radiology', do: 'American Osteopathic Board of Radiology', specialty: 'Diagnostic Radiology' },
  '207P00000X': {
    md: 'American Board of Emergency Medicine',
    do: 'American Osteopathic Board of Emergency Medicine',
    specialty: 'Emergency Medicine',
  },
  '208M00000X': { md: 'American Board of Internal Medicine', do: 'American Osteopathic Board of Internal Medicine', specialty: 'Hospital Medicine' },
};

/** Subspecialists and hospitalists are internists first: NPPES lists that as a second taxonomy. */
const SECONDARY_TAXONOMY: Record<string, { code: string; desc: string }> = {
  '207RE0101X': { code: '207R00000X', desc: 'Internal Medicine Physician' },
  '207RC0000X': { code: '207R00000X', desc: 'Internal Medicine Physician' },
  '208M00000X': { code: '207R00000X', desc: 'Internal Medicine Physician' },
};

const concept = (system: string, code: string, display?: string): CodeableConcept => ({
  coding: [{ system, code, ...(display ? { display } : {}) }],
});
const TERMINOLOGY = 'http://terminology.hl7.org/CodeSystem';

const PRIMARY_SOURCE_TYPES = {
  npi: ['auth-source', 'Authoritative source', 'NPPES NPI Registry (CMS)'],
  license: ['lic-board', 'Licensing Board', 'Oregon Medical Board'],
  dea: ['reg-auth', 'Registration Authority', 'DEA Diversion Control Division'],
  board_certification: ['issuer', 'Issuing source', ''],
  oig_exclusion: ['legal', 'Legal source', 'HHS OIG List of Excluded Individuals/Entities (LEIE)'],
  sam_exclusion: ['legal', 'Legal source', 'SAM.gov exclusions (GSA)'],
  medicare_enrollment: ['reg-auth', 'Registration Authority', 'CMS PECOS'],
} as const satisfies Record<Check, readonly [string, string, string]>;

type Outcome = 'validated' | 'val-fail' | 'in-process';

/**
 * What the credentialing committee does when a check fails (R4 `failure-action` codes): a missing or
 * lapsed NPI, license or exclusion stops the file; the others are followed up.
 */
const FAILURE_ACTIONS = {
  npi: ['fatal', 'Fatal'],
  license: ['fatal', 'Fatal'],
  dea: ['warn', 'Warning'],
  board_certification: ['warn', 'Warning'],
  oig_exclusion: ['fatal', 'Fatal'],
  sam_exclusion: ['fatal', 'Fatal'],
  medicare_enrollment: ['warn', 'Warning'],
} as const satisfies Record<Check, readonly [string, string]>;

/** The credentials verification organization that runs every check (the validator). */
export const VERIFIER_NAME = 'Synthetic Sandbox Credentials Verification Organization';

const addDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

interface VerificationOptions {
  id: string;
  practitioner: Reference;
  /** The organization the practitioner applies to join: whom the application was attested for. */
  organization: Reference;
  check: Check;
  outcome: Outcome;
  performed: string;
  source?: string;
  targetLocation?: string;
  meta: Meta;
}

/**
 * One primary-source check as a VerificationResult with what HL7 NDH's Verification profile requires:
 * target, need, status date, validation type and process, failure action, the primary source as an
 * Organization (contained: the sources are not organizations of the world), the practitioner's
 * attestation of the application it checks, and the validator.
 */
function verification(options: VerificationOptions): VerificationResult {
  const { check, outcome, performed } = options;
  const [typeCode, typeDisplay, defaultSource] = PRIMARY_SOURCE_TYPES[check];
  const validationStatus = { validated: ['successful', 'Successful'], 'val-fail': ['failed', 'Failed'], 'in-process': ['unknown', 'Unknown'] }[
    outcome
  ];
  const [failureCode, failureDisplay] = FAILURE_ACTIONS[check];
  const sourceName = `${options.source ?? defaultSource} (synthetic)`;
  const sourceId = `${options.id}-source`;
  const verifierId = `${options.id}-verifier`;
  const containedMeta = { tag: options.meta.tag };
  const primarySource: Organization = { resourceType: 'Organization', id: sourceId, meta: containedMeta, active: true, name: sourceName };
  const verifier: Organization = { resourceType: 'Organization', id: verifierId, meta: containedMeta, active: true, name: VERIFIER_NAME };
  return {
    resourceType: 'VerificationResult',
    id: options.id,
    meta: options.meta,
    contained: [primarySource, verifier],
    target: [options.practitioner],
    ...(options.targetLocation ? { targetLocation: [options.targetLocation] } : {}),
    need: concept(`${TERMINOLOGY}/need`, 'periodic', 'Periodic'),
    status: outcome,
    statusDate: `${performed}T09:00:00Z`,
    validationType: concept(`${TERMINOLOGY}/validation-type`, 'primary', 'Primary Source'),
    validationProcess: [
      concept(`${TERMINOLOGY}/validation-process`, check === 'npi' ? 'edit-check' : 'primary', check === 'npi' ? 'edit check' : 'primary source'),
    ],
    frequency: { repeat: { frequency: 1, period: RECREDENTIALING_MONTHS, periodUnit: 'mo' } },
    lastPerformed: `${performed}T09:00:00Z`,
    nextScheduled: addMonths(performed, RECREDENTIALING_MONTHS),
    failureAction: concept(`${TERMINOLOGY}/failure-action`, failureCode, failureDisplay),
    primarySource: [
      {
        who: { reference: `#${sourceId}`, display: sourceName },
        type: [concept(`${TERMINOLOGY}/primary-source-type`, typeCode, typeDisplay)],
        communicationMethod: [concept(`${TERMINOLOGY}/verificationresult-communication-method`, 'pull', 'Pull')],
        validationStatus: concept(`${TERMINOLOGY}/validation-status`, validationStatus[0]!, validationStatus[1]),
        validationDate: `${performed}T09:00:00Z`,
        canPushUpdates: concept(`${TERMINOLOGY}/can-push-updates`, 'no', 'No'),
      },
    ],
    attestation: {
      who: options.practitioner,
      onBehalfOf: options.organization,
      communicationMethod: concept(`${TERMINOLOGY}/verificationresult-communication-method`, 'portal', 'Portal'),
      // The application is attested a fortnight before the checks run.
      date: addDays(performed, -14),
    },
    validator: [{ organization: { reference: `#${verifierId}`, display: VERIFIER_NAME } }],
  };
}

/** The world practitioner's check: ids and references from the world. */
function worldVerification(
  practitionerId: string,
  organization: Reference,
  options: Omit<VerificationOptions, 'id' | 'practitioner' | 'organization' | 'meta'> & { suffix?: string },
): VerificationResult {
  const { suffix, ...rest } = options;
  return verification({
    ...rest,
    id: `syn-vr-${practitionerId.replace('syn-prac-', '')}-${options.check.replace(/_/g, '-')}${suffix ? `-${suffix}` : ''}`,
    practitioner: { reference: `Practitioner/${practitionerId}` },
    organization,
    meta: SYNTHETIC_META,
  });
}

function digitsOf(text: string): string {
  let digits = '';
  for (const character of text) digits += String(character.charCodeAt(0) % 10);
  return digits;
}

/** The credentialing file of one of the world's practitioners, or undefined for an unknown id. */
export function credentialingFile(store: FhirStore, practitionerId: string): CredentialingFile | undefined {
  const practitioner = store.read('Practitioner', practitionerId) as Practitioner | undefined;
  if (!practitioner) return undefined;
  const role = (store.list('PractitionerRole') as PractitionerRole[]).find(
    (candidate) => candidate.practitioner?.reference === `Practitioner/${practitionerId}`,
  )!;
  const organization = store.read('Organization', role.organization!.reference!.split('/')[1]!) as {
    name: string;
    identifier: { value: string }[];
    address: { line: string[]; city: string; state: string; postalCode: string }[];
    telecom: { value: string }[];
  };
  const number = Number(practitionerId.slice(-3));
  const variation: Variation | undefined = (VARIATIONS as Record<string, Variation>)[practitionerId];
  const name = practitioner.name![0]!;
  const credential = name.suffix![0]!;
  const isPhysician = credential === 'MD' || credential === 'DO';
  const npiNumber = practitioner.identifier!.find((identifier) => identifier.system === SYSTEM.npi)!.value!;
  const taxonomy = role.specialty![0]!.coding![0]!;
  const performed = `2025-${String(((number * 5) % 9) + 2).padStart(2, '0')}-${String(((number * 7) % 20) + 5).padStart(2, '0')}`;
  const digits = digitsOf(`${npiNumber}${name.family}`);
  const licenseNumber = `${isPhysician ? credential : 'NP'}${digits.slice(0, 5)}`;

  const licenses: License[] = [
    {
      state: 'OR',
      number: licenseNumber,
      type: isPhysician ? (credential === 'DO' ? 'Osteopathic Physician and Surgeon' : 'Medical Doctor') : 'Nurse Practitioner',
      status: variation === 'expired_license' ? 'expired' : 'active',
      issued_on: `${2008 + (number % 9)}-0${(number % 8) + 1}-15`,
      expires_on: variation === 'expired_license' ? '2025-11-30' : `${2026 + (number % 2)}-12-31`,
      practice_state: true,
    },
    ...(variation === 'expired_secondary_license'
      ? [
          {
            state: 'WA',
            number: `MD${digits.slice(5, 13)}`,
            type: 'Physician and Surgeon',
            status: 'expired' as const,
            issued_on: '2012-03-01',
            expires_on: '2025-06-30',
            practice_state: false,
          },
        ]
      : []),
  ];
  const board = BOARDS[taxonomy.code!]!;
  const boardName = credential === 'DO' ? board.do : board.md;
  const boardPending = variation === 'in_progress';
  const excluded = variation === 'excluded';
  const medicarePending = variation === 'in_progress';
  const dea =
    variation === 'no_dea'
      ? null
      : {
          number: deaNumber(isPhysician ? 'B' : 'M', name.family!, digits.slice(2)),
          state: 'OR',
          schedules: isPhysician ? ['2', '2N', '3', '3N', '4', '5'] : ['3', '3N', '4', '5'],
          status: 'active' as const,
          expires_on: `${2026 + (number % 3)}-0${(number % 9) + 1}-30`,
        };

  const organizationRef: Reference = { reference: role.organization!.reference!, display: organization.name };
  const check = (options: Parameters<typeof worldVerification>[2]) => worldVerification(practitionerId, organizationRef, options);
  const verifications: VerificationResult[] = [
    check({ check: 'npi', outcome: 'validated', performed, targetLocation: 'Practitioner.identifier[0]' }),
    ...licenses.map((license) =>
      check({
        check: 'license',
        suffix: license.state.toLowerCase(),
        outcome: license.status === 'active' ? 'validated' : 'val-fail',
        performed,
        source: license.state === 'OR' ? (isPhysician ? 'Oregon Medical Board' : 'Oregon State Board of Nursing') : 'Washington Medical Commission',
      }),
    ),
    ...(dea ? [check({ check: 'dea', outcome: 'validated', performed })] : []),
    check({ check: 'board_certification', outcome: boardPending ? 'in-process' : 'validated', performed, source: boardName }),
    check({ check: 'oig_exclusion', outcome: excluded ? 'val-fail' : 'validated', performed }),
    check({ check: 'sam_exclusion', outcome: excluded ? 'val-fail' : 'validated', performed }),
    check({ check: 'medicare_enrollment', outcome: medicarePending ? 'in-process' : 'validated', performed }),
  ];

  const reasons: string[] = [];
  const notes: string[] = [];
  for (const license of licenses) {
    if (license.status !== 'expired') continue;
    const text = `${license.state} license ${license.number} expired on ${license.expires_on}`;
    if (license.practice_state) reasons.push(`${text}, and the practitioner practises in ${license.state}`);
    else notes.push(`${text}; the practitioner no longer practises in ${license.state}`);
  }
  if (excluded) {
    reasons.push('Listed on the OIG exclusion list (LEIE) since 2025-09-18: 1128(b)(4), license revocation or suspension');
    reasons.push('Active exclusion in SAM.gov (reciprocal, HHS OIG)');
  }
  const pending: string[] = [];
  if (boardPending) pending.push(`Board certification: awaiting ${boardName}`);
  if (medicarePending) pending.push('Medicare enrollment: PECOS application pending with the MAC');
  const status: CredentialingStatus = reasons.length > 0 ? 'flagged' : pending.length > 0 ? 'in_progress' : 'verified';

  const location = organization.address[0]!;
  const nppesAddress = (purpose: 'LOCATION' | 'MAILING') => ({
    country_code: 'US' as const,
    country_name: 'United States' as const,
    address_purpose: purpose,
    address_type: 'DOM' as const,
    address_1: location.line[0]!.toUpperCase(),
    city: location.city.toUpperCase(),
    state: location.state,
    postal_code: `${location.postalCode}0000`,
    telephone_number: organization.telecom[0]!.value,
  });
  const secondary = SECONDARY_TAXONOMY[taxonomy.code!];

  return {
    practitioner_id: practitionerId,
    name: `${name.given!.join(' ')} ${name.family}, ${credential}`,
    status,
    reasons: status === 'in_progress' ? pending : reasons,
    notes,
    npi: {
      number: npiNumber,
      enumeration_type: 'NPI-1',
      basic: {
        first_name: name.given![0]!.toUpperCase(),
        last_name: name.family!.toUpperCase(),
        ...(name.prefix ? { name_prefix: name.prefix[0]! } : {}),
        credential: isPhysician ? `${credential[0]}.${credential[1]}.` : credential,
        sole_proprietor: 'NO',
        gender: practitioner.gender === 'female' ? 'F' : 'M',
        enumeration_date: `${2006 + (number % 10)}-0${(number % 9) + 1}-1${number % 10}`,
        last_updated: `2024-${String((number % 12) + 1).padStart(2, '0')}-0${(number % 9) + 1}`,
        status: 'A',
      },
      addresses: [nppesAddress('LOCATION'), nppesAddress('MAILING')],
      taxonomies: [
        { code: taxonomy.code!, taxonomy_group: '', desc: taxonomy.display!, state: 'OR', license: licenseNumber, primary: true },
        ...(secondary ? [{ ...secondary, taxonomy_group: '', state: 'OR', license: licenseNumber, primary: false }] : []),
      ],
      identifiers: [],
    },
    licenses,
    dea,
    board_certifications: [
      {
        board: boardName,
        specialty: board.specialty,
        status: boardPending ? 'pending_verification' : 'certified',
        certified_since: `${2010 + (number % 10)}-07-01`,
        expires_on: boardPending ? null : `${2027 + (number % 4)}-12-31`,
      },
    ],
    exclusions: {
      oig_leie: excluded
        ? {
            checked_on: performed,
            excluded: true,
            exclusion_type: '1128(b)(4)',
            exclusion_date: '2025-09-18',
            description: 'License revocation or suspension',
          }
        : { checked_on: performed, excluded: false },
      sam: excluded
        ? { checked_on: performed, status: 'active_exclusion', exclusion_program: 'Reciprocal', activated_on: '2025-09-20' }
        : { checked_on: performed, status: 'no_active_exclusion' },
    },
    medicare: {
      status: medicarePending ? 'pending' : 'approved',
      pecos_enrollment_id: `I20${digits.slice(0, 12)}`,
      ptan: medicarePending ? null : `OR${digits.slice(6, 12)}`,
      effective_on: medicarePending ? null : `${2015 + (number % 8)}-01-01`,
      reassigned_to_npi: organization.identifier[0]!.value,
    },
    verifications,
    last_credentialed_on: performed,
    recredential_due_on: addMonths(performed, RECREDENTIALING_MONTHS),
  };
}

/** Every practitioner's file, in id order. */
export function credentialingFiles(store: FhirStore): CredentialingFile[] {
  return store.list('Practitioner').map((practitioner) => credentialingFile(store, practitioner.id!)!);
}

/**
 * What the `credentialing.practitioner.verified` event carries: a `collection` Bundle of the
 * Practitioner, their PractitionerRole and every VerificationResult. One shape for every emitter.
 */
function verificationBundle(id: string, meta: Meta, timestamp: string, resources: FhirResource[]): Bundle {
  return {
    resourceType: 'Bundle',
    id,
    meta,
    type: 'collection',
    timestamp,
    entry: resources.map((resource) => ({
      fullUrl: `https://sandbox.example/fhir/${resource.resourceType}/${resource.id}`,
      resource: structuredClone(resource),
    })),
  };
}

/** A world practitioner's file as FHIR R4, for webhooks (see verificationBundle). */
export function credentialingBundle(store: FhirStore, practitionerId: string): Bundle | undefined {
  const file = credentialingFile(store, practitionerId);
  if (!file) return undefined;
  const role = (store.list('PractitionerRole') as PractitionerRole[]).find(
    (candidate) => candidate.practitioner?.reference === `Practitioner/${practitionerId}`,
  );
  const resources: FhirResource[] = [store.read('Practitioner', practitionerId)!, ...(role ? [role] : []), ...file.verifications];
  return verificationBundle(
    `syn-credentialing-${practitionerId.replace('syn-prac-', '')}`,
    SYNTHETIC_META,
    `${file.last_credentialed_on}T09:00:00Z`,
    resources,
  );
}

/**
 * A new practitioner whose every primary-source check passed (the `practitioner_credentialing`
 * scenario): their role in `organization` and a validated VerificationResult per check, in the
 * event's Bundle. `idOf` names each resource, so a scenario run stamps them as its own.
 */
export function newlyVerifiedBundle(options: {
  practitioner: Practitioner;
  organization: Reference;
  specialty: CodeableConcept;
  /** The day the checks ran, YYYY-MM-DD. */
  performed: string;
  idOf(kind: string): string;
  meta: Meta;
}): Bundle {
  const { practitioner, organization, performed, idOf, meta } = options;
  const practitionerRef: Reference = { reference: `Practitioner/${practitioner.id}` };
  const role: PractitionerRole = {
    resourceType: 'PractitionerRole',
    id: idOf('role'),
    meta,
    active: true,
    period: { start: performed },
    practitioner: practitionerRef,
    organization,
    specialty: [options.specialty],
  };
  const checks: { check: Check; targetLocation?: string }[] = [
    { check: 'npi', targetLocation: 'Practitioner.identifier[0]' },
    { check: 'license' },
    { check: 'board_certification' },
    { check: 'oig_exclusion' },
    { check: 'sam_exclusion' },
    { check: 'medicare_enrollment' },
  ];
  const verifications = checks.map(({ check, targetLocation }) =>
    verification({
      id: idOf(`vr-${check.replace(/_/g, '-')}`),
      practitioner: practitionerRef,
      organization,
      check,
      outcome: 'validated',
      performed,
      ...(targetLocation ? { targetLocation } : {}),
      ...(check === 'board_certification' ? { source: 'American Board of Internal Medicine' } : {}),
      meta,
    }),
  );
  return verificationBundle(idOf('credentialing'), meta, `${performed}T09:00:00Z`, [practitioner, role, ...verifications]);
}
