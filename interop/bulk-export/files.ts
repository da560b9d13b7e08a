import type { FhirResource, OperationOutcome } from 'fhir/r4';
import { operationOutcome } from '../../fhir/operation-outcome';
import { type FhirStore, patientOf } from '../../fixtures/store';
import { type ExportRequest, typeFilterMatcher } from './request';
import type { ExportFileKind } from './vocabulary';

/** A file is cut at this size (and the type continues in the next), so no stored file is larger. */
export const EXPORT_FILE_MAX_BYTES = 1024 * 1024;

export interface ExportFile {
  name: string;
  kind: ExportFileKind;
  resourceType: string;
  count: number;
  content: string;
}

/** The types an export of each level can hold: every served type, or the types of a patient's compartment. */
export function levelTypes(fhirStore: FhirStore, level: ExportRequest['level']): string[] {
  if (level === 'system') return [...fhirStore.supportedTypes];
  return fhirStore.supportedTypes.filter((type) => fhirStore.list(type).some((resource) => patientOf(resource) !== undefined));
}

/** The members of a Group of the world, as patient ids; null when there is no such Group. */
export function groupMembers(fhirStore: FhirStore, groupId: string): Set<string> | null {
  const group = fhirStore.read('Group', groupId);
  if (group?.resourceType !== 'Group') return null;
  return new Set(
    (group.member ?? []).flatMap((member) => (member.entity.reference?.startsWith('Patient/') ? [member.entity.reference.slice(8)] : [])),
  );
}

/** The resources of one type an export writes: its level's, updated after `_since`, matching one of its `_typeFilter` queries. */
export function exportedResources(fhirStore: FhirStore, request: ExportRequest, type: string): FhirResource[] {
  const members = request.level === 'group' ? (groupMembers(fhirStore, request.groupId!) ?? new Set<string>()) : null;
  const since = request.since === null ? null : Date.parse(request.since);
  const filters = (request.typeFilters[type] ?? []).map((query) => typeFilterMatcher(type, query));
  return fhirStore.list(type).filter((resource) => {
    if (request.level !== 'system') {
      const owner = patientOf(resource);
      if (owner === undefined || (members !== null && !members.has(owner))) return false;
    }
    if (since !== null && !(Date.parse(resource.meta?.lastUpdated ?? '') > since)) return false;
    return filters.length === 0 || filters.some((criteria) => criteria.every((matches) => matches(resource)));
  });
}

/**
 * One type's files: its resources as NDJSON, one line each, exactly as the FHIR read serves them
 * (the stored resource's JSON, synthetic tag included), cut at EXPORT_FILE_MAX_BYTES. With
 * `leaveOutEveryNth` (the partial chaos), every nth resource is left out and reported instead in an
 * error file, one OperationOutcome per resource.
 */
export function exportFiles(type: string, resources: readonly FhirResource[], leaveOutEveryNth: number | null): ExportFile[] {
  const kept: string[] = [];
  const errors: string[] = [];
  resources.forEach((resource, index) => {
    if (leaveOutEveryNth !== null && (index + 1) % leaveOutEveryNth === 0) errors.push(JSON.stringify(leftOut(resource)));
    else kept.push(JSON.stringify(resource));
  });
  return [...cut(`${type}`, 'output', type, kept), ...cut(`${type}-error`, 'error', 'OperationOutcome', errors)];
}

function leftOut(resource: FhirResource): OperationOutcome {
  const outcome = operationOutcome(
    'transient',
    `${resource.resourceType}/${resource.id} was left out of this export by the organization's reliability profile (bulk_export.partial chaos).`,
  );
  outcome.issue[0]!.expression = [`${resource.resourceType}/${resource.id}`];
  return outcome;
}

function cut(stem: string, kind: ExportFileKind, resourceType: string, lines: string[]): ExportFile[] {
  const files: ExportFile[] = [];
  let current: string[] = [];
  let bytes = 0;
  const close = () => {
    if (current.length === 0) return;
    files.push({ name: `${stem}-${files.length + 1}.ndjson`, kind, resourceType, count: current.length, content: `${current.join('\n')}\n` });
    current = [];
    bytes = 0;
  };
  for (const line of lines) {
    const size = Buffer.byteLength(line) + 1;
    if (bytes + size > EXPORT_FILE_MAX_BYTES) close();
    current.push(line);
    bytes += size;
  }
  close();
  return files;
}
