import { describe, expect, it } from 'vitest';
import { SYNTHETIC_TAG } from '../../../fixtures/synthetic';
import { parseHl7 } from '../../../hl7/parse';
import { renderTemplate, TEMPLATE_IDS } from '../../../hl7/templates';
import { CONTROL_ID_SYSTEM, mapToFhir } from '../../../hl7/to-fhir';
import { validateHl7 } from '../../../hl7/validate';
import { referencesIn } from '../../support/fhir-references';
import { fhirErrors } from '../../support/fhir-validator';
import { resources } from './messages';

/** hl7/to-fhir/index.ts: every template's message, segment by segment through the handler table, to a valid message Bundle. */

describe('templates', () => {
  it.each(TEMPLATE_IDS)('%s validates clean and maps to a valid, synthetic R4 message Bundle', (id) => {
    const template = renderTemplate(id)!;
    const message = parseHl7(template.er7);
    const { type, trigger, problems } = validateHl7(message);
    expect(problems).toEqual([]);
    expect(trigger!.event).toBe(template.event);
    const { bundle } = mapToFhir(message, type!);
    expect(fhirErrors(bundle)).toEqual([]);
    expect(bundle.type).toBe('message');
    expect(bundle.identifier).toEqual({ system: CONTROL_ID_SYSTEM, value: message.header.get(10) });
    expect(bundle.meta?.tag).toContainEqual(SYNTHETIC_TAG);
    expect(resources(bundle)[0]!.resourceType).toBe('MessageHeader');
    const fullUrls = new Set(bundle.entry!.map((entry) => entry.fullUrl));
    for (const resource of resources(bundle)) {
      expect(fhirErrors(resource), `${resource.resourceType} in ${id}`).toEqual([]);
      expect(resource.meta?.tag).toContainEqual(SYNTHETIC_TAG);
      for (const reference of referencesIn(resource)) expect(fullUrls, `${reference} in ${resource.resourceType}`).toContain(reference);
    }
    // The same message maps to the same Bundle (ids derive from the control id).
    expect(mapToFhir(parseHl7(template.er7), type!).bundle).toEqual(bundle);
  });
});
