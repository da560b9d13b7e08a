import type { DiagnosticReport, Encounter, FhirResource, MessageHeader, Patient, Reference, ServiceRequest } from 'fhir/r4';
import type { Hl7Segment, ParsedHl7 } from '../parse';
import { BundleBuilder } from './bundle';
import { at } from './elements';

/**
 * What mapping one message has established so far, segment by segment: the patient and encounter
 * the next segments are about, the order group an OBX joins, the resource an NTE annotates, what
 * the message is about. Handlers read it and move it on only through its named transitions (a PID
 * starts a patient, an ORC an order group…), so what each segment changes is said in one place.
 */

/** What a mapper reads of the message: the Bundle's ids, the message's type and event, and who the segment is about. */
export interface MappingContext {
  readonly bundle: BundleBuilder;
  /** MSH-9.1^MSH-9.2, e.g. `ADT^A04`. */
  readonly type: string;
  /** MSH-9.2, e.g. `A04`. */
  readonly event: string;
  /** MSH-7's offset, for times sent without one. */
  readonly offset: string;
  /** The patient of the last PID. */
  readonly patient?: Reference;
  /** The encounter of the last PV1 after that PID. */
  readonly encounter?: Reference;
}

/** Maps one segment, moving the message state on. */
export type SegmentHandler = (segment: Hl7Segment, state: MessageState) => void;
/** A family's handlers, keyed by segment id. */
export type SegmentHandlers = Readonly<Record<string, SegmentHandler>>;

/** An SCH and the resource segments (AIS, AIG, AIL, AIP) that follow it. */
export interface ScheduleGroup {
  sch: Hl7Segment;
  resources: Hl7Segment[];
}

/** A TXA and the OBX segments after it, its content. */
export interface DocumentGroup {
  txa: Hl7Segment;
  observations: Hl7Segment[];
}

/** An ORC and what the segments after it made: the OBR, its ServiceRequest and its DiagnosticReport. */
export interface OrderGroup {
  readonly orc?: Hl7Segment;
  readonly obr?: Hl7Segment;
  readonly request?: ServiceRequest;
  readonly report?: DiagnosticReport;
}

/** Message codes whose OBR/OBX are results (a DiagnosticReport per OBR), not orders with supporting observations. */
const RESULT_MESSAGES = new Set(['ORU', 'OUL', 'OPU', 'ORF', 'OSR', 'EDR', 'PEX']);

/**
 * For each segment, whether an RXE follows it in the same order group (before the next ORC): one
 * pass from the end, so an RXO asks in constant time however many orders the message holds.
 */
function encodedOrders(message: ParsedHl7): boolean[] {
  const ahead = new Array<boolean>(message.segments.length);
  let seen = false;
  for (let index = message.segments.length - 1; index >= 0; index--) {
    ahead[index] = seen;
    const name = message.segments[index]!.name;
    if (name === 'RXE') seen = true;
    else if (name === 'ORC') seen = false;
  }
  return ahead;
}

export class MessageState implements MappingContext {
  readonly bundle: BundleBuilder;
  readonly event: string;
  readonly offset: string;
  /** What kind of message this is, which decides what some segments become. */
  readonly kind: { adt: boolean; result: boolean; document: boolean; vaccination: boolean };
  /** The MessageHeader's entry, first in the Bundle, written once the focus is known. */
  readonly header: Reference;
  /** MSH-7, else the time of mapping: the Bundle's timestamp. */
  readonly timestamp: string;
  /** What the message is about (MessageHeader.focus, Provenance.target). */
  readonly focus = { encounters: [] as Reference[], subjects: [] as Reference[], patients: [] as Reference[] };
  /** Each segment is read once: an appointment takes the AI* segments after its SCH, a document the OBX after its TXA. */
  readonly schedules: ScheduleGroup[] = [];
  readonly documents: DocumentGroup[] = [];

  #patient?: { reference: Reference; resource: Patient };
  #encounter?: Reference;
  #visit?: Encounter;
  #order: OrderGroup = {};
  #last?: FhirResource;
  readonly #rxeAhead: boolean[];

  constructor(
    readonly message: ParsedHl7,
    readonly type: string,
  ) {
    const msh = message.header;
    const [code = '', event = ''] = type.split('^');
    this.event = event;
    this.bundle = new BundleBuilder(`${msh.get(3)}|${msh.get(4)}|${msh.get(10)}`);
    this.offset = /([+-]\d{4})$/.exec(msh.get(7))?.[1] ?? '+0000';
    this.timestamp = at(msh.get(7), this) ?? new Date().toISOString();
    this.header = this.bundle.add('MSH', { resourceType: 'MessageHeader' } as MessageHeader);
    this.kind = {
      adt: code === 'ADT',
      result: RESULT_MESSAGES.has(code),
      document: code === 'MDM',
      vaccination: code === 'VXU' || code === 'VXR' || code === 'VXX',
    };
    this.#rxeAhead = encodedOrders(message);
  }

  get patient(): Reference | undefined {
    return this.#patient?.reference;
  }
  /** The last PID's Patient, which PD1 and MRG add to. */
  get patientResource(): Patient | undefined {
    return this.#patient?.resource;
  }
  get encounter(): Reference | undefined {
    return this.#encounter;
  }
  /** The last PV1's Encounter (none when that PV1 made none), which DG1 names its diagnoses on. */
  get visit(): Encounter | undefined {
    return this.#visit;
  }
  get order(): OrderGroup {
    return this.#order;
  }
  /** The last resource mapped with `mapped`, for the NTE or IN2 that follows it. */
  get lastMapped(): FhirResource | undefined {
    return this.#last;
  }

  /** The segment right after this one, when it is a `name` (PV2 after PV1, RXR after an RX*). */
  following(segment: Hl7Segment, name: string): Hl7Segment | undefined {
    const next = this.message.segments[segment.position];
    return next?.name === name ? next : undefined;
  }
  /** Whether an RXE after this segment encodes the same order. */
  encodedLater(segment: Hl7Segment): boolean {
    return this.#rxeAhead[segment.position - 1]!;
  }

  /** A resource a segment mapped to (none when it could not make one): added under the segment's key and remembered for an NTE. */
  mapped(segment: Hl7Segment, resource: FhirResource | undefined): Reference | undefined {
    if (!resource) return undefined;
    this.#last = resource;
    return this.bundle.add(`${segment.name}|${segment.position}`, resource);
  }

  /** PID: a new patient; the segments after it are about them, in no encounter yet, with nothing for an NTE to join. */
  patientIdentified(pid: Hl7Segment, patient: Patient): Reference {
    const reference = this.bundle.add(`${pid.name}|${pid.position}`, patient);
    // The patient is referenced by display too, as the fixtures do.
    const name = patient.name?.[0];
    if (name) reference.display = [...(name.given ?? []), name.family].filter(Boolean).join(' ');
    this.#patient = { reference, resource: patient };
    this.#encounter = undefined;
    this.focus.patients.push(reference);
    this.#last = undefined;
    return reference;
  }

  /** PV1: the visit the segments after it happen in (none for one that is not a patient's, class N). */
  visitMapped(pv1: Hl7Segment, encounter: Encounter | undefined): void {
    this.#visit = encounter;
    if (!encounter) return;
    this.#encounter = this.bundle.add(`${pv1.name}|${pv1.position}`, encounter);
    this.focus.encounters.push(this.#encounter);
  }

  /** ORC: a new order group. */
  orderStarted(orc: Hl7Segment): void {
    this.#order = { orc };
  }

  /** OBR: the group's request (none without a patient, which ServiceRequest requires), remembered for an NTE. */
  requestMapped(obr: Hl7Segment, request: ServiceRequest | undefined): Reference | undefined {
    this.#order = { orc: this.#order.orc, obr, request };
    return this.mapped(obr, request);
  }

  /** OBR in a result: the group's report, which its OBX and SPM join; none without a code, which it requires. */
  reportMapped(obr: Hl7Segment, report: DiagnosticReport): void {
    if (!report.code) return;
    this.#order = { ...this.#order, report };
    this.focus.subjects.push(this.bundle.add(`OBR-report|${obr.position}`, report));
  }

  /** SCH: an appointment, mapped once every segment is read (SIU puts SCH before PID). */
  scheduleStarted(sch: Hl7Segment): void {
    this.schedules.push({ sch, resources: [] });
  }
  /** AIS, AIG, AIL, AIP: a resource of the last appointment. */
  scheduleResource(segment: Hl7Segment): void {
    this.schedules.at(-1)?.resources.push(segment);
  }

  /** TXA: a document, mapped once its content is read. */
  documentStarted(txa: Hl7Segment): void {
    this.documents.push({ txa, observations: [] });
  }
  /** OBX in a document message: the last document's text, not an observation. */
  documentContent(obx: Hl7Segment): void {
    this.documents.at(-1)?.observations.push(obx);
  }
}
