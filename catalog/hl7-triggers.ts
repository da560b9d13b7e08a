/**
 * The HL7 v2 message types the sandbox takes, as data: the catalog event each one becomes, the
 * message structure it has, and the segments it cannot do without. Validation, templates and the
 * catalog read this one table; adding a trigger here is what makes the sandbox accept it.
 */
export interface Hl7Trigger {
  /** MSH-9.1^MSH-9.2, e.g. `ADT^A01`. */
  readonly type: string;
  /** MSH-9.3, the abstract message structure, e.g. `ADT_A01`. */
  readonly structure: string;
  /** The catalog event (catalog/events.ts) the message is delivered under. */
  readonly event: string;
  /** Segments that must be present beyond MSH; a missing one is ERR code 100. */
  readonly requiredSegments: readonly string[];
  readonly description: string;
}

export const HL7_TRIGGERS: readonly Hl7Trigger[] = [
  { type: 'ADT^A01', structure: 'ADT_A01', event: 'adt.patient.admitted', requiredSegments: ['PID', 'PV1'], description: 'Admit/visit notification' },
  { type: 'ADT^A02', structure: 'ADT_A02', event: 'adt.patient.transferred', requiredSegments: ['PID', 'PV1'], description: 'Transfer a patient' },
  { type: 'ADT^A03', structure: 'ADT_A03', event: 'adt.patient.discharged', requiredSegments: ['PID', 'PV1'], description: 'Discharge/end visit' },
  { type: 'ADT^A04', structure: 'ADT_A01', event: 'adt.patient.registered', requiredSegments: ['PID', 'PV1'], description: 'Register a patient' },
  {
    type: 'ADT^A08',
    structure: 'ADT_A01',
    event: 'adt.patient.updated',
    requiredSegments: ['PID', 'PV1'],
    description: 'Update patient information',
  },
  { type: 'ADT^A28', structure: 'ADT_A05', event: 'adt.person.added', requiredSegments: ['PID'], description: 'Add person information' },
  { type: 'ADT^A31', structure: 'ADT_A05', event: 'adt.person.updated', requiredSegments: ['PID'], description: 'Update person information' },
  {
    type: 'ADT^A40',
    structure: 'ADT_A39',
    event: 'adt.patient.merged',
    requiredSegments: ['PID', 'MRG'],
    description: 'Merge patient: patient identifier list',
  },
  {
    type: 'ORU^R01',
    structure: 'ORU_R01',
    event: 'results.report.final',
    requiredSegments: ['PID', 'OBR', 'OBX'],
    description: 'Unsolicited observation result',
  },
  {
    type: 'ORM^O01',
    structure: 'ORM_O01',
    event: 'orders.service_request.placed',
    requiredSegments: ['PID', 'ORC', 'OBR'],
    description: 'General order',
  },
  {
    type: 'OML^O21',
    structure: 'OML_O21',
    event: 'orders.service_request.placed',
    requiredSegments: ['PID', 'ORC', 'OBR'],
    description: 'Laboratory order',
  },
  {
    type: 'SIU^S12',
    structure: 'SIU_S12',
    event: 'scheduling.appointment.booked',
    requiredSegments: ['SCH', 'PID'],
    description: 'Notification of new appointment booking',
  },
  {
    type: 'SIU^S15',
    structure: 'SIU_S12',
    event: 'scheduling.appointment.cancelled',
    requiredSegments: ['SCH', 'PID'],
    description: 'Notification of appointment cancellation',
  },
  {
    type: 'MDM^T02',
    structure: 'MDM_T02',
    event: 'documents.document.available',
    requiredSegments: ['PID', 'TXA', 'OBX'],
    description: 'Original document notification and content',
  },
  {
    type: 'VXU^V04',
    structure: 'VXU_V04',
    event: 'medications.immunization.recorded',
    requiredSegments: ['PID', 'RXA'],
    description: 'Unsolicited vaccination record update',
  },
  {
    type: 'DFT^P03',
    structure: 'DFT_P03',
    event: 'claims.charge.posted',
    requiredSegments: ['PID', 'FT1'],
    description: 'Post detail financial transaction',
  },
  {
    type: 'RDE^O11',
    structure: 'RDE_O11',
    event: 'medications.prescription.created',
    requiredSegments: ['PID', 'ORC', 'RXE'],
    description: 'Pharmacy/treatment encoded order',
  },
];

const byType = new Map(HL7_TRIGGERS.map((trigger) => [trigger.type, trigger]));

/** The trigger for `MSH-9.1^MSH-9.2`, if the sandbox takes it. */
export function findHl7Trigger(type: string): Hl7Trigger | undefined {
  return byType.get(type);
}

/** Whether any trigger has this message code (MSH-9.1), e.g. `ADT`: tells ERR 200 from 201. */
export function isKnownMessageCode(code: string): boolean {
  return HL7_TRIGGERS.some((trigger) => trigger.type.startsWith(`${code}^`));
}
