import type { AllergyIntolerance, Condition, Encounter, Procedure } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { admission, all, one } from './messages';

/** hl7/to-fhir/clinical.ts: AL1, IAM, DG1, PR1. */

describe('clinical segments of ADT', () => {
  const bundle = admission();

  it('AL1 and IAM → AllergyIntolerance (category by table 0127, criticality by table 0128, reactions)', () => {
    const [drug, food] = all<AllergyIntolerance>(bundle, 'AllergyIntolerance');
    expect(drug).toMatchObject({ category: ['medication'], criticality: 'high', recordedDate: '2020-01-01' });
    expect(drug!.code!.coding![0]).toEqual({ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '70618', display: 'Penicillin' });
    expect(drug!.reaction!.map((reaction) => reaction.manifestation[0]!.text)).toEqual(['Hives', 'Wheezing']);
    expect(food).toMatchObject({ category: ['food'], criticality: 'low' });
    expect(food!.identifier![0]!.value).toBe('ALG1');
  });

  it('DG1 → Condition (encounter diagnosis), named on the Encounter; PR1 → Procedure', () => {
    const condition = one<Condition>(bundle, 'Condition');
    expect(condition.code!.coding![0]).toEqual({ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'I10', display: 'Essential hypertension' });
    expect(condition.category![0]!.coding![0]!.code).toBe('encounter-diagnosis');
    expect(condition.onsetDateTime).toBe('2025-03-01');
    expect(condition.recorder!.display).toBe('Gus Cedar');
    const conditionUrl = bundle.entry!.find((entry) => entry.resource === condition)!.fullUrl;
    expect(one<Encounter>(bundle, 'Encounter').diagnosis).toEqual([{ condition: { reference: conditionUrl } }]);
    const procedure = one<Procedure>(bundle, 'Procedure');
    expect(procedure).toMatchObject({
      status: 'completed',
      performedPeriod: { start: '2025-03-01T12:00:00-05:00', end: '2025-03-01T17:45:00Z' },
    });
    expect(procedure.code!.coding![0]!.system).toBe('http://snomed.info/sct');
  });
});
