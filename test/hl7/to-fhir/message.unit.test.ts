import type { MessageHeader, Observation, Patient, Provenance } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../../hl7/templates';
import { admission, all, mapped, one, resources } from './messages';

/** hl7/to-fhir/message.ts (MSH, EVN, NTE) and what every message goes through. */

describe('the message', () => {
  const bundle = admission();

  it('EVN → Provenance of the message’s focus; unknown Z-segments are left out', () => {
    const provenance = one<Provenance>(bundle, 'Provenance');
    expect(provenance.activity!.coding![0]).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v2-0003', code: 'A01' });
    expect(provenance.recorded).toBe('2025-03-01T10:15:00-05:00');
    expect(provenance.agent[0]!.who!.display).toBe('Hana Willow');
    const header = one<MessageHeader>(bundle, 'MessageHeader');
    expect(provenance.target).toEqual(header.focus!.map((focus) => ({ reference: focus.reference })));
    expect(JSON.stringify(bundle)).not.toContain('local');
  });

  it("works the same with custom delimiters, whose escapes mean that message's own separators", () => {
    const standard = renderTemplate('oru-r01')!.er7;
    const swap: Record<string, string> = { '|': '!', '^': '`', '~': '*', '\\': '$', '&': '=' };
    for (const character of Object.values(swap)) expect(standard).not.toContain(character);
    const custom = standard.replace(/[|^~\\&]/g, (character) => swap[character]!);
    expect(custom.startsWith('MSH!`*$=!')).toBe(true);
    const a = mapped(standard);
    const b = mapped(custom);
    expect(resources(b).map((resource) => resource.resourceType)).toEqual(resources(a).map((resource) => resource.resourceType));
    expect(all<Observation>(b, 'Observation').map((observation) => observation.valueString ?? observation.valueQuantity?.value)).toEqual([
      ...all<Observation>(a, 'Observation')
        .slice(0, 2)
        .map((observation) => observation.valueQuantity?.value),
      'Specimen received = processed; results reviewed ! released',
    ]);
    expect(all<Patient>(b, 'Patient')[0]!.identifier).toEqual(all<Patient>(a, 'Patient')[0]!.identifier);
  });
});
