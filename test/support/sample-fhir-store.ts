import type { Encounter, FhirResource, Observation, Patient, Practitioner } from 'fhir/r4';
import type { FhirStore } from '../../fixtures/store';

/** A few synthetic resources behind the FhirStore interface, until the generated world is merged. */
const SYNTHETIC = { tag: [{ system: 'urn:sandbox:tag', code: 'synthetic' }] };

function patient(id: string, family: string, given: string): Patient {
  return { resourceType: 'Patient', id, meta: { ...SYNTHETIC, versionId: '1', lastUpdated: '2024-01-01T00:00:00Z' }, name: [{ family, given: [given] }], gender: 'female', birthDate: '1980-01-01', generalPractitioner: [{ reference: 'Practitioner/pr-1' }] };
}

function observation(id: string, patientId: string, category: string, code: string, date: string): Observation {
  return {
    resourceType: 'Observation',
    id,
    meta: { ...SYNTHETIC, versionId: '1', lastUpdated: '2024-01-01T00:00:00Z' },
    status: 'final',
    category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: category }] }],
    code: { coding: [{ system: 'http://loinc.org', code }] },
    subject: { reference: `Patient/${patientId}` },
    effectiveDateTime: date,
  };
}

export function sampleFhirStore(): FhirStore {
  const resources: FhirResource[] = [
    patient('p-1', 'Garcia', 'Ana'),
    patient('p-2', 'Okafor', 'Chidi'),
    patient('p-3', 'Lindqvist', 'Maja'),
    { resourceType: 'Practitioner', id: 'pr-1', name: [{ family: 'Hale', given: ['Rui'] }] } satisfies Practitioner,
    { resourceType: 'Encounter', id: 'enc-1', status: 'finished', class: { code: 'AMB' }, subject: { reference: 'Patient/p-1' } } satisfies Encounter,
    ...Array.from({ length: 7 }, (_, index) => observation(`obs-1-${index}`, 'p-1', index < 4 ? 'laboratory' : 'vital-signs', index < 4 ? '2339-0' : '8867-4', `2023-0${index + 1}-15T10:00:00Z`)),
    observation('obs-2-0', 'p-2', 'laboratory', '2339-0', '2023-02-01T09:00:00Z'),
  ];
  const byType = (type: string) => resources.filter((resource) => resource.resourceType === type).sort((a, b) => a.id!.localeCompare(b.id!));
  const ownerOf = (resource: FhirResource) => (resource as { subject?: { reference?: string } }).subject?.reference;
  return {
    supportedTypes: ['Patient', 'Observation', 'Encounter', 'Practitioner'],
    read: (type, id) => resources.find((resource) => resource.resourceType === type && resource.id === id),
    list: byType,
    listForPatient: (type, patientId) => byType(type).filter((resource) => ownerOf(resource) === `Patient/${patientId}`),
    patients: () => byType('Patient') as Patient[],
  };
}
