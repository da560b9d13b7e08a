import { describe, expect, it } from 'vitest';
import {
  applyUpdate,
  assess,
  chooseOutcome,
  DEFAULT_PAYER_ID,
  decidePended,
  payerFor,
  reviewWaitMs,
  turnaroundHours,
} from '../../claims/pas/decision';
import type { PasItem, PasRequestSummary } from '../../claims/pas/request';
import { findPayerRules } from '../../claims/payer-rules';

const item = (sequence: number, code: string, change?: PasItem['change'], cancelled = false): PasItem => ({
  sequence,
  service: { system: 'http://www.ama-assn.org/go/cpt', code, display: undefined },
  quantity: 4,
  change,
  cancelled,
});

function summary(items: PasItem[], extra: Partial<PasRequestSummary> = {}): PasRequestSummary {
  return {
    claim: { system: 'urn:test', value: '1' },
    updates: null,
    cancelAll: false,
    expedited: false,
    memberIds: [],
    insurerIdentifiers: [],
    providerIdentifiers: [],
    items,
    ...extra,
  };
}

const rules = findPayerRules(DEFAULT_PAYER_ID)!;
const context = { rules, outcome: null, authorizationNumber: 'PA-1', now: Date.parse('2026-01-05T10:00:00Z') };
// 73721 (MRI knee) is on Silver Harbor's prior-authorization list; 99213 (office visit) is not.
const onList = '73721';
const offList = '99213';

describe('the PAS payer decision', () => {
  it('pends a listed service and certifies it once the review time is up; certifies any other at once', () => {
    const pended = assess(summary([item(1, onList)]), context);
    expect(pended.decision).toBe('pended');
    expect(pended.moreInformation).toBeTruthy();
    const decided = decidePended(pended, context);
    expect(decided.items.map((entry) => entry.action)).toEqual(['A1']);
    expect(decided).toMatchObject({ decision: 'certified', preAuthRef: 'PA-1', period: { start: '2026-01-05' } });
    expect(assess(summary([item(1, offList)]), context).decision).toBe('certified');
  });

  it('takes the chosen outcome: header, then test member id, then the organization’s default', () => {
    const members = summary([], { memberIds: ['sbx-pa-denied'] });
    expect(chooseOutcome(members, 'approved', 'modified')).toEqual({ outcome: 'approved', source: 'header' });
    expect(chooseOutcome(members, undefined, 'modified')).toEqual({ outcome: 'denied', source: 'member_id' });
    expect(chooseOutcome(summary([]), undefined, 'modified')).toEqual({ outcome: 'modified', source: 'organization' });
    expect(chooseOutcome(summary([]), undefined, null)).toEqual({ outcome: null, source: 'payer_rules' });
    const modified = assess(summary([item(1, offList)]), { ...context, outcome: 'modified' });
    expect(modified.items[0]).toMatchObject({ action: 'A6', quantity: 2 });
  });

  it('applies claim updates: an added item decided, a cancelled one withdrawn, a cancel of all', () => {
    const approved = assess(summary([item(1, offList), item(2, offList)]), context);
    const updated = applyUpdate(approved, summary([item(2, offList, undefined, true), item(3, onList, 'added')]), context);
    expect(updated.items.map((entry) => [entry.sequence, entry.action, entry.cancelled])).toEqual([
      [1, 'A1', false],
      [2, 'A1', true],
      [3, 'A4', false],
    ]);
    expect(updated.decision).toBe('pended');
    expect(applyUpdate(updated, summary([], { cancelAll: true }), context).decision).toBe('cancelled');
  });

  it('keeps the review inside CMS-0057-F and scales it by the pace', () => {
    expect(turnaroundHours(rules, false)).toBeLessThanOrEqual(7 * 24);
    expect(turnaroundHours(rules, true)).toBeLessThanOrEqual(72);
    expect(reviewWaitMs(168, { mode: 'realtime', time_scale: null })).toBe(168 * 3_600_000);
    expect(reviewWaitMs(168, { mode: 'accelerated', time_scale: 1440 })).toBe(7 * 60_000);
    expect(reviewWaitMs(168, { mode: 'manual', time_scale: null })).toBeNull();
    expect(payerFor(['SBX01']).payer_id).toBe('syn-payer-alderpeak');
    expect(payerFor(['1234567893']).payer_id).toBe(DEFAULT_PAYER_ID);
  });
});
