import type {
  CodeableConcept,
  DiagnosticReport,
  Observation,
  ObservationComponent,
  ObservationReferenceRange,
  Quantity,
  Reference,
  Specimen,
} from 'fhir/r4';
import { codeableConcept, decimal, entityIdentifier, v2Coding } from '../datatypes';
import type { Hl7Repetition, Hl7Segment } from '../parse';
import { table0078, table0085, table0123 } from './concept-maps';
import { all, append, at, compact, linesOf, nonEmpty, when } from './elements';
import { mapServiceRequest, orderIdentifiers } from './orders';
import type { MappingContext, SegmentHandlers } from './state';

/**
 * Results: OBR → its ServiceRequest (orders.ts) and, in a result message or with a result status,
 * a DiagnosticReport; OBX → Observation, joining the report before it; SPM → Specimen of the
 * report and the request.
 */

const COMPARATORS = new Set(['<', '<=', '>=', '>']);

/** OBR → DiagnosticReport: OBR-4 code, OBR-24 section, OBR-25 status, OBR-7 effective, OBR-22 issued. */
function mapDiagnosticReport(
  orc: Hl7Segment | undefined,
  obr: Hl7Segment,
  basedOn: Reference | undefined,
  context: MappingContext,
): DiagnosticReport {
  const section = obr.get(24) || 'LAB';
  return compact<DiagnosticReport>({
    resourceType: 'DiagnosticReport',
    // OBR-2/ORC-2 (placer) and OBR-3/ORC-3 (filler order number), as the IG's OBR map has both.
    identifier: orderIdentifiers(orc, obr),
    basedOn: basedOn ? [basedOn] : undefined,
    status: table0123[obr.get(25)] ?? 'final',
    category: [{ coding: [v2Coding('0074', section)] }],
    code: codeableConcept(obr.field(4).first)!,
    subject: context.patient,
    encounter: context.encounter,
    effectiveDateTime: when(obr.get(7), context),
    issued: at(obr.get(22), context),
  });
}

function unitOf(obx: Hl7Segment): Omit<Quantity, 'value'> {
  const units = obx.field(6).first;
  const code = units.get(1);
  if (!code) return {};
  const ucum = /^(UCUM|ucum)$/.test(units.get(3)) || units.get(3) === '';
  return { unit: units.get(2) || code, ...(ucum ? { system: 'http://unitsofmeasure.org', code } : {}) };
}

function referenceRange(text: string, unit: Omit<Quantity, 'value'>): ObservationReferenceRange | undefined {
  if (!text) return undefined;
  const quantity = (value: string) => ({ value: decimal(value)!, ...unit });
  const range = /^\s*(-?[\d.]+)\s*-\s*(-?[\d.]+)\s*$/.exec(text);
  if (range && decimal(range[1]!) !== undefined && decimal(range[2]!) !== undefined)
    return { low: quantity(range[1]!), high: quantity(range[2]!), text };
  const bound = /^\s*([<>]=?)\s*(-?[\d.]+)\s*$/.exec(text);
  if (bound && decimal(bound[2]!) !== undefined)
    return bound[1]!.startsWith('<') ? { high: quantity(bound[2]!), text } : { low: quantity(bound[2]!), text };
  return { text };
}

type ObservationValue = Pick<
  Observation,
  'valueQuantity' | 'valueCodeableConcept' | 'valueString' | 'valueDateTime' | 'valueTime' | 'valueRange' | 'valueRatio' | 'valueInteger'
>;

const TEXT_TYPES = new Set(['ST', 'TX', 'FT']);

/** One repetition of OBX-5 by its value type (OBX-2), after the IG's OBX map: undefined when it does not read as that type. */
function observationValue(type: string, value: Hl7Repetition, unit: Omit<Quantity, 'value'>, context: MappingContext): ObservationValue | undefined {
  switch (type) {
    case 'NM': {
      const number = decimal(value.get(1));
      return number === undefined ? undefined : { valueQuantity: { value: number, ...unit } };
    }
    case 'SN': {
      const [comparator, first, separator, second] = [value.get(1), decimal(value.get(2)), value.get(3), decimal(value.get(4))];
      if (first === undefined) return undefined;
      if (second !== undefined && (separator === ':' || separator === '/'))
        return { valueRatio: { numerator: { value: first }, denominator: { value: second } } };
      if (second !== undefined && (separator === '-' || separator === ''))
        return { valueRange: { low: { value: first, ...unit }, high: { value: second, ...unit } } };
      if (comparator === '<>') return { valueString: value.components.map((component) => component.join(' ')).join('') };
      return {
        valueQuantity: { value: first, ...(COMPARATORS.has(comparator) ? { comparator: comparator as Quantity['comparator'] } : {}), ...unit },
      };
    }
    case 'CWE':
    case 'CE':
    case 'CNE':
    case 'CF': {
      const concept = codeableConcept(value);
      return concept ? { valueCodeableConcept: concept } : undefined;
    }
    case 'ID':
    case 'IS':
      return value.get(1) ? { valueCodeableConcept: { coding: [{ code: value.get(1) }] } } : undefined;
    case 'DT':
    case 'DTM':
    case 'TS': {
      const moment = when(value.get(1), context);
      return moment ? { valueDateTime: moment } : undefined;
    }
    case 'TM': {
      const time = /^(\d{2})(\d{2})?(\d{2})?/.exec(value.get(1));
      return time && Number(time[1]) < 24 ? { valueTime: `${time[1]}:${time[2] ?? '00'}:${time[3] ?? '00'}` } : undefined;
    }
    default: {
      const text = value.components
        .map((component) => component.filter(Boolean).join(' '))
        .filter(Boolean)
        .join(' ');
      return text ? { valueString: text } : undefined;
    }
  }
}

/**
 * OBX-5 by OBX-2. Text types (ST, TX, FT) repeat line by line and become one string; any other
 * repeated value becomes one component per repetition (the IG: a repeating OBX-5 is not one value).
 */
function observationValues(obx: Hl7Segment, context: MappingContext): Partial<Observation> {
  const value = obx.field(5);
  if (!value.present) return {};
  const type = obx.get(2);
  const unit = unitOf(obx);
  if (TEXT_TYPES.has(type) || (type === '' && value.repetitions.length > 1)) return { valueString: linesOf(value) };
  const values = value.repetitions.filter((repetition) => repetition.present).map((repetition) => observationValue(type, repetition, unit, context));
  if (values.length === 1) return values[0] ?? {};
  const code = codeableConcept(obx.field(3).first);
  const components = values.filter((item): item is ObservationValue => item !== undefined).map((item) => ({ code, ...item }) as ObservationComponent);
  return code && components.length ? { component: components } : {};
}

/** OBX → Observation; undefined without OBX-3 (Observation.code is required), a warning already reported. */
function mapObservation(obx: Hl7Segment, obr: Hl7Segment | undefined, context: MappingContext): Observation | undefined {
  const code = codeableConcept(obx.field(3).first);
  if (!code) return undefined;
  const unit = unitOf(obx);
  const range = referenceRange(obx.get(7), unit);
  const interpretation = all(obx.field(8), (flag) => {
    const code = flag.get(1);
    if (!code) return undefined;
    return {
      coding: [table0078.has(code) ? { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code } : v2Coding('0078', code)],
    } as CodeableConcept;
  });
  return compact<Observation>({
    resourceType: 'Observation',
    // OBX-11 through the IG's ConceptMap table 0085; unknown when it is missing or not in the table.
    status: table0085[obx.get(11)] ?? 'unknown',
    category: obr
      ? [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory', display: 'Laboratory' }] }]
      : undefined,
    code,
    subject: context.patient,
    encounter: context.encounter,
    effectiveDateTime: when(obx.get(14) || (obr?.get(7) ?? ''), context),
    ...observationValues(obx, context),
    interpretation,
    referenceRange: range ? [range] : undefined,
  });
}

/** SPM → Specimen (SPM-2 identifier, SPM-4 type, SPM-8 source site, SPM-17 collection time). */
function mapSpecimen(spm: Hl7Segment, context: MappingContext): Specimen | undefined {
  const type = codeableConcept(spm.field(4).first, 'http://terminology.hl7.org/CodeSystem/v2-0487');
  const collected = when(spm.get(17, 1), context);
  const site = codeableConcept(spm.field(8).first);
  return compact<Specimen>({
    resourceType: 'Specimen',
    identifier: nonEmpty([
      entityIdentifier(spm.field(2).first, 'PLAC'),
      spm.field(2).first.get(2) ? entityIdentifier(spm.field(2).first, 'FILL') : undefined,
    ]),
    type,
    subject: context.patient,
    collection: collected || site ? compact({ collectedDateTime: collected, bodySite: site }) : undefined,
  });
}

export const resultSegments: SegmentHandlers = {
  OBR: (segment, state) => {
    const { orc } = state.order;
    // ServiceRequest.subject is required: a result without a patient (the standard allows one) is a report only.
    const request = state.patient ? mapServiceRequest(orc, segment, state.kind.result, state) : undefined;
    const requestReference = state.requestMapped(segment, request);
    if (state.kind.result || segment.get(25) !== '') state.reportMapped(segment, mapDiagnosticReport(orc, segment, requestReference, state));
    else if (requestReference) state.focus.subjects.push(requestReference);
  },
  OBX: (segment, state) => {
    // In a document message the OBX are the document's text, not observations.
    if (state.kind.document) {
      state.documentContent(segment);
      return;
    }
    const reference = state.mapped(segment, mapObservation(segment, state.order.obr, state));
    const { report } = state.order;
    if (reference && report) report.result = append(report.result, reference);
  },
  SPM: (segment, state) => {
    const reference = state.mapped(segment, mapSpecimen(segment, state));
    const { report, request } = state.order;
    if (reference && report) report.specimen = append(report.specimen, reference);
    if (reference && request) request.specimen = append(request.specimen, reference);
  },
};
