import type { CodeableConcept } from 'fhir/r4';
import { codeableConcept, dateTime, decimal, instant } from '../datatypes';
import type { Hl7Field, Hl7Repetition } from '../parse';

/** Small pieces every family's mappers use to build FHIR elements from v2 fields. */

export const nonEmpty = <T>(items: (T | undefined)[]): T[] | undefined => {
  const kept = items.filter((item): item is T => item !== undefined);
  return kept.length ? kept : undefined;
};
export const all = <T>(field: Hl7Field, map: (repetition: Hl7Repetition) => T | undefined) => nonEmpty(field.repetitions.map(map));
/** A CodeableConcept as a one-item list, or undefined when the field holds no code and no text. */
export const conceptList = (value: Hl7Repetition, defaultSystem?: string): CodeableConcept[] | undefined => {
  const concept = codeableConcept(value, defaultSystem);
  return concept ? [concept] : undefined;
};
/** A count (unsignedInt): a whole number of zero or more, else undefined. */
export const count = (value: string): number | undefined => {
  const number = decimal(value);
  return number !== undefined && Number.isInteger(number) && number >= 0 ? number : undefined;
};
/** One element as a list, or undefined. */
export const listOf = <T>(element: T | undefined): T[] | undefined => (element === undefined ? undefined : [element]);
/** An element with at least one value, else undefined (FHIR has no empty elements). */
export const someValue = <T extends object>(element: T): T | undefined => (Object.keys(element).length > 0 ? element : undefined);

/** Adds to an optional list in place (a 256 KiB ORU adds thousands of results: no copying). */
export function append<T>(list: T[] | undefined, item: T): T[] {
  if (!list) return [item];
  list.push(item);
  return list;
}
/** Drops undefined properties, so the JSON carries only elements with values. */
export function compact<T extends object>(resource: T): T {
  return Object.fromEntries(Object.entries(resource).filter(([, value]) => value !== undefined && value !== '')) as T;
}

/** A v2 time as a dateTime or instant, in MSH-7's offset when it was sent without one. */
export const when = (value: string, context: { offset: string }) => dateTime(value, context.offset);
export const at = (value: string, context: { offset: string }) => instant(value, context.offset);

/** PL (point of care^room^bed^facility) as a display. */
export const placeDisplay = (place: Hl7Repetition) => [place.get(4, 1), place.get(1), place.get(2), place.get(3)].filter(Boolean).join(' ');

/** An NTE's text (its lines joined), for the resource before it. */
export const linesOf = (field: Hl7Field) =>
  field.repetitions.map((line) => line.components.map((component) => component.join(' ')).join(' ')).join('\n');
