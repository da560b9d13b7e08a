import { describe, expect, it } from 'vitest';
import { findEvent } from '../../catalog/events';
import { loadFhirStore } from '../../fixtures/store';
import { parseHl7 } from '../../hl7/parse';
import { listTemplates, renderTemplate, UnknownPatientError } from '../../hl7/templates';
import { HL7_TRIGGERS } from '../../hl7/triggers';

/** hl7/templates.ts: a template per trigger, filled from the synthetic world (to-fhir/index.unit.test.ts maps each). */

describe('templates', () => {
  it('exist for every trigger the sandbox takes', () => {
    const templated = new Set(listTemplates().map((template) => template.message_type.split('^').slice(0, 2).join('^')));
    expect([...templated].sort()).toEqual(HL7_TRIGGERS.map((trigger) => trigger.type).sort());
  });

  it('are delivered under a catalog event, one for every trigger', () => {
    for (const trigger of HL7_TRIGGERS) expect(findEvent(trigger.event), trigger.type).toBeDefined();
  });

  it('are filled from a synthetic patient of the world, and from another one on request', () => {
    const store = loadFhirStore();
    const other = store.patients()[7]!;
    const template = renderTemplate('adt-a01', other.id)!;
    const pid = parseHl7(template.er7).segment('PID')!;
    expect(pid.get(5, 1)).toBe(other.name![0]!.family);
    expect(pid.get(3, 1)).toBe(other.identifier!.find((identifier) => identifier.system?.endsWith('/mrn'))!.value);
    expect(template.patient_id).toBe(other.id);
    expect(() => renderTemplate('adt-a01', 'syn-pat-nobody')).toThrow(UnknownPatientError);
    expect(renderTemplate('nope')).toBeUndefined();
  });
});
