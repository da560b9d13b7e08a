import type { Encounter } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../../hl7/templates';
import { all, bundleOf, mapped, msh, one, PID } from './messages';

/** hl7/to-fhir/visit.ts: PV1 with PV2. */

describe('PV1/PV2 → Encounter', () => {
  const encounterOf = (trigger: string, pv1: string, ...more: string[]) =>
    one<Encounter>(bundleOf(msh(`ADT^${trigger}^ADT_A01`), `EVN|${trigger}|20250301`, PID, pv1, ...more), 'Encounter');

  it('PV1-2 → class (IG ConceptMap PatientClass: E EMER, I IMP, O AMB, P PRENC)', () => {
    expect(['E', 'I', 'O', 'P'].map((patientClass) => encounterOf('A01', `PV1|1|${patientClass}`).class.code)).toEqual([
      'EMER',
      'IMP',
      'AMB',
      'PRENC',
    ]);
    expect(encounterOf('A01', 'PV1|1|I').class.system).toBe('http://terminology.hl7.org/CodeSystem/v3-ActCode');
  });

  it('status by trigger (A01 in-progress, A03 finished, A04 planned, A05 planned, A11 cancelled, A21 onleave), finished once PV1-45 is sent', () => {
    const statuses = ['A01', 'A03', 'A04', 'A05', 'A11', 'A21'].map((trigger) => encounterOf(trigger, 'PV1|1|I').status);
    expect(statuses).toEqual(['in-progress', 'finished', 'planned', 'planned', 'cancelled', 'onleave']);
    const discharged = encounterOf('A08', `PV1|1|I${'|'.repeat(42)}202502281000|202503011000`);
    expect(discharged.status).toBe('finished');
    expect(discharged.period).toEqual({ start: '2025-02-28T10:00:00-05:00', end: '2025-03-01T10:00:00-05:00' });
  });

  it('PV1-4 → type, PV1-7/8/9/17 → participants ATND/REF/CON/ADM, PV1-19 → visit number, PV2-3 → reason', () => {
    const encounter = encounterOf(
      'A01',
      'PV1|1|I|W1^101^A^LAKESIDE||||1111111111^Cedar^Gus^^^Dr^^^NPI|2222^Maple^Ben|3333^Ridge^Cleo|MED|||||||4444^Brook^Dev||V100^^^LAKESIDE^VN',
      'PV2|||R51^Headache^I10',
    );
    const withType = encounterOf('A01', 'PV1|1|I||E');
    expect(withType.type).toEqual([{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0007', code: 'E' }] }]);
    expect(encounter.participant!.map((participant) => participant.type![0]!.coding![0]!.code)).toEqual(['ATND', 'REF', 'CON', 'ADM']);
    expect(encounter.participant![0]!.individual!.identifier).toEqual({ system: 'http://hl7.org/fhir/sid/us-npi', value: '1111111111' });
    expect(encounter.identifier![0]).toMatchObject({ value: 'V100', type: { coding: [{ code: 'VN' }] } });
    expect(encounter.reasonCode![0]!.coding![0]).toEqual({ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'R51', display: 'Headache' });
    expect(encounter.location![0]).toMatchObject({ location: { display: 'LAKESIDE W1 101 A' }, status: 'active' });
  });
});

describe('visits in whole messages', () => {
  it('sets the encounter status the trigger means (A03 finished, A04 planned as the IG maps it, A02 with the prior location)', () => {
    expect(all<Encounter>(mapped(renderTemplate('adt-a03')!.er7), 'Encounter')[0]!.status).toBe('finished');
    expect(all<Encounter>(mapped(renderTemplate('adt-a04')!.er7), 'Encounter')[0]!.status).toBe('planned');
    const transfer = all<Encounter>(mapped(renderTemplate('adt-a02')!.er7), 'Encounter')[0]!;
    expect(transfer.location!.map((location) => location.status)).toEqual(['completed', 'active']);
  });
});
