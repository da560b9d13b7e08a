import type { Bundle, ClaimResponse } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { reviewActionOf } from '../../claims/prior-authorization';
import { loadFhirStore } from '../../fixtures/store';

/** The catalog's sample resources, as built; catalog.test.ts checks the catalog the API serves. */
const fhirStore = loadFhirStore();

describe('the event catalog', () => {
  it('describes events in the state they announce', () => {
    const admitted = findEvent('adt.patient.admitted')!.sampleResource(fhirStore) as { status: string; period: { end?: string } };
    expect(admitted.status).toBe('in-progress');
    expect(admitted.period.end).toBeUndefined();
    const discharged = findEvent('adt.patient.discharged')!.sampleResource(fhirStore) as { status: string };
    expect(discharged.status).toBe('finished');
    // Prior auth as PAS 2.2.1 says: outcome complete, the X12 278 review action on the item (A4 pended, A1 certified, A3 not certified).
    const sample = (event: string) => findEvent(event)!.sampleResource(fhirStore) as ClaimResponse;
    const pended = sample('prior_auth.request.pended');
    expect(pended).toMatchObject({ outcome: 'complete', communicationRequest: [{ reference: '#more-information' }] });
    expect(reviewActionOf(pended)).toBe('A4');
    expect(pended.preAuthRef).toBeUndefined();
    const approved = sample('prior_auth.request.approved');
    expect(reviewActionOf(approved)).toBe('A1');
    expect(approved.preAuthRef).toBeDefined();
    const denied = sample('prior_auth.request.denied');
    expect(reviewActionOf(denied)).toBe('A3');
    expect(denied.disposition).toMatch(/^Denied/);
    expect(new Set([pended, approved].map((response) => response.identifier![0]!.value)).size).toBe(2);
    const acknowledged = sample('claims.claim.acknowledged');
    // The 277CA acknowledgement, the adjudicated ClaimResponse and its EOB each have their own business identifier.
    const adjudicated = findEvent('claims.claim.adjudicated')!.sampleResource(fhirStore) as Bundle;
    const identifiers = [acknowledged, ...adjudicated.entry!.map((entry) => entry.resource as ClaimResponse)].map(
      (resource) => resource.identifier![0]!.value,
    );
    expect(new Set(identifiers).size).toBe(3);
    // A sample is a copy: changing it never changes the shared world.
    expect(fhirStore.read('Encounter', (admitted as unknown as { id: string }).id)).toMatchObject({ status: 'finished' });
  });
});
