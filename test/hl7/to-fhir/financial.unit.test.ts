import type { ChargeItem, Coverage } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../../hl7/templates';
import { admission, all, mapped, one } from './messages';

/** hl7/to-fhir/financial.ts: IN1 with IN2, GT1 (its test is beside NK1's, in patient.unit.test.ts), FT1. */

describe('financial segments', () => {
  const bundle = admission();

  it('IN1/IN2 → Coverage with payer, period, group and the relationship IN2-72 gives', () => {
    const coverage = one<Coverage>(bundle, 'Coverage');
    expect(coverage.payor[0]).toMatchObject({ display: 'Alderpeak Health', identifier: { value: 'PAYER7' } });
    expect(coverage.period).toEqual({ start: '2025-01-01', end: '2025-12-31' });
    expect(coverage.class![0]).toMatchObject({ value: 'GRP9', name: 'Group Nine' });
    expect(coverage.relationship!.coding![0]!.code).toBe('spouse');
  });

  it('FT1 → ChargeItem (DFT^P03)', () => {
    const charge = all<ChargeItem>(mapped(renderTemplate('dft-p03')!.er7), 'ChargeItem')[0]!;
    expect(charge.status).toBe('billable');
    expect(charge.code.coding![0]!.system).toBe('http://www.ama-assn.org/go/cpt');
    expect(charge.priceOverride).toMatchObject({ currency: 'USD' });
    expect(charge.priceOverride!.value).toBeGreaterThan(0);
  });
});
