/**
 * The HL7 v2 message types the sandbox has a template for, as data: the catalog event each one
 * becomes, the message structure it has, and the segments it expects. Every other well-formed
 * message is accepted too and mapped segment by segment (hl7/to-fhir/) under the generic event.
 * Validation, templates and the catalog read this one table.
 */
export interface Hl7Trigger {
  /** MSH-9.1^MSH-9.2, e.g. `ADT^A01`. */
  readonly type: string;
  /** MSH-9.3, the abstract message structure, e.g. `ADT_A01`. */
  readonly structure: string;
  /** The catalog event (catalog/events.ts) the message is delivered under. */
  readonly event: string;
  /** Segments the structure requires beyond MSH; a missing one is ERR code 100 (a warning unless strict, PID aside). */
  readonly requiredSegments: readonly string[];
  readonly description: string;
}

export const HL7_TRIGGERS: readonly Hl7Trigger[] = [
  { type: 'ADT^A01', structure: 'ADT_A01', event: 'hl7.adt_a01.received', requiredSegments: ['PID', 'PV1'], description: 'Admit/visit notification' },
  { type: 'ADT^A02', structure: 'ADT_A02', event: 'hl7.adt_a02.received', requiredSegments: ['PID', 'PV1'], description: 'Transfer a patient' },
  { type: 'ADT^A03', structure: 'ADT_A03', event: 'hl7.adt_a03.received', requiredSegments: ['PID', 'PV1'], description: 'Discharge/end visit' },
  { type: 'ADT^A04', structure: 'ADT_A01', event: 'hl7.adt_a04.received', requiredSegments: ['PID', 'PV1'], description: 'Register a patient' },
  {
    type: 'ADT^A08',
    structure: 'ADT_A01',
    event: 'hl7.adt_a08.received',
    requiredSegments: ['PID', 'PV1'],
    description: 'Update patient information',
  },
  { type: 'ADT^A28', structure: 'ADT_A05', event: 'hl7.adt_a28.received', requiredSegments: ['PID'], description: 'Add person information' },
  { type: 'ADT^A31', structure: 'ADT_A05', event: 'hl7.adt_a31.received', requiredSegments: ['PID'], description: 'Update person information' },
  {
    type: 'ADT^A40',
    structure: 'ADT_A39',
    event: 'hl7.adt_a40.received',
    requiredSegments: ['PID', 'MRG'],
    description: 'Merge patient: patient identifier list',
  },
  {
    type: 'ORU^R01',
    structure: 'ORU_R01',
    event: 'hl7.oru_r01.received',
    requiredSegments: ['PID', 'OBR', 'OBX'],
    description: 'Unsolicited observation result',
  },
  {
    type: 'ORM^O01',
    structure: 'ORM_O01',
    event: 'hl7.orm_o01.received',
    requiredSegments: ['PID', 'ORC', 'OBR'],
    description: 'General order',
  },
  {
    type: 'OML^O21',
    structure: 'OML_O21',
    event: 'hl7.oml_o21.received',
    requiredSegments: ['PID', 'ORC', 'OBR'],
    description: 'Laboratory order',
  },
  {
    type: 'SIU^S12',
    structure: 'SIU_S12',
    event: 'hl7.siu_s12.received',
    requiredSegments: ['SCH', 'PID'],
    description: 'Notification of new appointment booking',
  },
  {
    type: 'SIU^S15',
    structure: 'SIU_S12',
    event: 'hl7.siu_s15.received',
    requiredSegments: ['SCH', 'PID'],
    description: 'Notification of appointment cancellation',
  },
  {
    type: 'MDM^T02',
    structure: 'MDM_T02',
    event: 'hl7.mdm_t02.received',
    requiredSegments: ['PID', 'TXA', 'OBX'],
    description: 'Original document notification and content',
  },
  {
    type: 'VXU^V04',
    structure: 'VXU_V04',
    event: 'hl7.vxu_v04.received',
    requiredSegments: ['PID', 'RXA'],
    description: 'Unsolicited vaccination record update',
  },
  {
    type: 'DFT^P03',
    structure: 'DFT_P03',
    event: 'hl7.dft_p03.received',
    requiredSegments: ['PID', 'FT1'],
    description: 'Post detail financial transaction',
  },
  {
    type: 'RDE^O11',
    structure: 'RDE_O11',
    event: 'hl7.rde_o11.received',
    requiredSegments: ['PID', 'ORC', 'RXE'],
    description: 'Pharmacy/treatment encoded order',
  },
];

const byType = new Map(HL7_TRIGGERS.map((trigger) => [trigger.type, trigger]));

/** The trigger with a template and its own event for `MSH-9.1^MSH-9.2`, if there is one. */
export function findHl7Trigger(type: string): Hl7Trigger | undefined {
  return byType.get(type);
}

/**
 * The event of every other HL7 v2 message (any message type, trigger and version): a message
 * Bundle mapped segment by segment; its MessageHeader.eventCoding names the trigger.
 */
export const GENERIC_HL7_EVENT = 'hl7.message.received';

/** The catalog event a message of this type (`ADT^A05`) is delivered under. */
export function hl7EventFor(type: string): string {
  return byType.get(type)?.event ?? GENERIC_HL7_EVENT;
}

/** Message codes whose every structure requires a PID (v2.3–2.8), ADT^A20 (bed status) aside. */
const PATIENT_MESSAGES = new Set(['ADT', 'BAR', 'DFT', 'MDM', 'VXU']);

/**
 * Whether a message of this type is about a patient, so that without a PID it cannot be processed
 * (AE even when lenient). An ORU, an order or an appointment may come without one (the standard
 * makes its patient group optional): strict mode still asks for it where the template does.
 */
export function requiresPatient(type: string): boolean {
  return PATIENT_MESSAGES.has(type.slice(0, 3)) && type !== 'ADT^A20';
}
