import type { ServiceRequest } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { bundleOf, labResult, msh, one, PID } from './messages';

/** hl7/to-fhir/orders.ts: ORC, TQ1, and the ServiceRequest an OBR orders. */

describe('orders', () => {
  const result = labResult();

  it('ORC/OBR → ServiceRequest: ORC-5 status (CM → completed), placer and filler ids, TQ1 timing and priority', () => {
    const order = one<ServiceRequest>(result, 'ServiceRequest');
    expect(order.status).toBe('completed');
    expect(order.identifier!.map((id) => [id.type!.coding![0]!.code, id.value])).toEqual([
      ['PLAC', 'PL100'],
      ['FILL', 'FL200'],
    ]);
    expect(order.occurrencePeriod).toEqual({ start: '2025-03-01T08:00:00-05:00', end: '2025-03-01T09:00:00-05:00' });
    expect(order.priority).toBe('stat');
    const status = (orc5: string) =>
      one<ServiceRequest>(
        bundleOf(msh('ORM^O01^ORM_O01', '2.3'), PID, `ORC|NW|PL1||||${orc5}`.replace('||||', `|||${orc5}|`), 'OBR|1|PL1||80061^Lipid^C4'),
        'ServiceRequest',
      ).status;
    expect(['CA', 'HD', 'IP', 'DC', ''].map((orc5) => status(orc5))).toEqual(['revoked', 'on-hold', 'active', 'revoked', 'active']);
  });
});
