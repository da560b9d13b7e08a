import { findPayerRules, type PayerRules, requiresPriorAuth } from '../payer-rules';
import { PAYERS } from '../payers';
import type { ReviewAction } from '../prior-authorization';
import type { PasItem, PasRequestSummary } from './request';
import type { AuthorizationDecision, PriorAuthOutcome } from './vocabulary';

/**
 * How the sandbox's payer decides a PAS request, pure so it is tested apart from Temporal and the
 * database: the payer rules (claims/payer-rules.ts) say which services need review, how long a
 * review may take (inside CMS-0057-F's 72 hours expedited, 7 days standard) and, unless the partner
 * chose an outcome, what the payer decides: a service on the payer's prior-authorization list is
 * pended (A4) and certified (A1) once its review time is up, any other is certified at once.
 */

/** The payer whose rules decide a request whose insurer names none of the sandbox's payers. */
export const DEFAULT_PAYER_ID = 'syn-payer-silverharbor';

/**
 * Test member ids: a Coverage subscriber id, Coverage identifier or Patient identifier equal to one
 * of these picks the outcome, as a payment sandbox's test cards do (docs/api/prior-authorization.md).
 */
export const TEST_MEMBER_IDS: Record<string, PriorAuthOutcome> = {
  'SBX-PA-APPROVED': 'approved',
  'SBX-PA-DENIED': 'denied',
  'SBX-PA-PENDED-APPROVED': 'pended_then_approved',
  'SBX-PA-PENDED-DENIED': 'pended_then_denied',
  'SBX-PA-MODIFIED': 'modified',
  'SBX-PA-ERROR': 'error',
};

/** The request header that picks the outcome of one submission. */
export const OUTCOME_HEADER = 'x-sandbox-prior-auth-outcome';

export type OutcomeSource = 'header' | 'member_id' | 'organization' | 'payer_rules';

/** Which outcome applies: the header, then a test member id, then the organization's setting; else the payer rules. */
export function chooseOutcome(
  summary: Pick<PasRequestSummary, 'memberIds'>,
  header: PriorAuthOutcome | undefined,
  organizationDefault: PriorAuthOutcome | null,
): { outcome: PriorAuthOutcome | null; source: OutcomeSource } {
  if (header) return { outcome: header, source: 'header' };
  const fromMember = summary.memberIds.map((id) => TEST_MEMBER_IDS[id.toUpperCase()]).find((outcome) => outcome !== undefined);
  if (fromMember) return { outcome: fromMember, source: 'member_id' };
  if (organizationDefault) return { outcome: organizationDefault, source: 'organization' };
  return { outcome: null, source: 'payer_rules' };
}

/** The sandbox payer the insurer's identifiers name (its id or electronic payer id), else the default payer. */
export function payerFor(insurerIdentifiers: string[]): PayerRules {
  const named = PAYERS.find((payer) => insurerIdentifiers.some((value) => value === payer.id || value === payer.electronicPayerId));
  return findPayerRules(named?.id ?? DEFAULT_PAYER_ID)!;
}

export interface ItemState {
  sequence: number;
  action: ReviewAction;
  /** The quantity authorized (A6 authorizes fewer units than asked). */
  quantity: number | undefined;
  cancelled: boolean;
  /** For a pended item: the action it gets once its review time is up. */
  decidesTo: ReviewAction | null;
  /** Whether the payer's list holds the service (what the pend asks documentation for). */
  onPriorAuthList: boolean;
}

export interface AuthorizationState {
  decision: AuthorizationDecision;
  items: ItemState[];
  /** The authorization number of a certified or modified request. */
  preAuthRef: string | null;
  /** The authorization's validity; a modified request gets a shorter one. */
  period: { start: string; end: string } | null;
  /** What a pended request waits for (the payer's documentation list), asked for by a contained CommunicationRequest. */
  moreInformation: string | null;
  /** Provider-side notes on what changed (claim updates), in order. */
  notes: string[];
}

const DAY_MS = 86_400_000;

function itemState(item: PasItem, rules: PayerRules, outcome: PriorAuthOutcome | null): ItemState {
  const onList = item.service.code !== undefined && requiresPriorAuth(rules, item.service.code);
  const base = { sequence: item.sequence, quantity: item.quantity, cancelled: false, onPriorAuthList: onList };
  switch (outcome) {
    case 'approved':
      return { ...base, action: 'A1', decidesTo: null };
    case 'denied':
      return { ...base, action: 'A3', decidesTo: null };
    case 'modified':
      return {
        ...base,
        action: 'A6',
        quantity: item.quantity === undefined ? undefined : Math.max(1, Math.floor(item.quantity / 2)),
        decidesTo: null,
      };
    case 'pended_then_approved':
      return { ...base, action: 'A4', decidesTo: 'A1' };
    case 'pended_then_denied':
      return { ...base, action: 'A4', decidesTo: 'A3' };
    default:
      return onList ? { ...base, action: 'A4', decidesTo: 'A1' } : { ...base, action: 'A1', decidesTo: null };
  }
}

/** The authorization's decision from its items' review actions. */
function decisionOf(items: ItemState[]): AuthorizationDecision {
  const live = items.filter((item) => !item.cancelled);
  if (live.length === 0) return 'cancelled';
  const actions = new Set(live.map((item) => item.action));
  if (actions.has('A4')) return 'pended';
  if (actions.size === 1) return actions.has('A1') ? 'certified' : actions.has('A3') ? 'not_certified' : 'modified';
  if (!actions.has('A3')) return 'modified';
  return 'partial';
}

/** The number, validity and documentation request that go with a decision. */
function settle(
  state: Omit<AuthorizationState, 'decision' | 'preAuthRef' | 'period' | 'moreInformation'>,
  context: Pick<DecisionContext, 'authorizationNumber' | 'rules' | 'now'>,
): AuthorizationState {
  const decision = decisionOf(state.items);
  const certifies = state.items.some((item) => !item.cancelled && (item.action === 'A1' || item.action === 'A6'));
  const modified = state.items.some((item) => !item.cancelled && item.action === 'A6');
  const validDays = context.rules.prior_authorization.approval_valid_days;
  const start = new Date(context.now).toISOString().slice(0, 10);
  const end = new Date(Date.parse(start) + (modified ? Math.ceil(validDays / 2) : validDays) * DAY_MS).toISOString().slice(0, 10);
  const pendedOnList = state.items.filter((item) => !item.cancelled && item.action === 'A4');
  const documentation = pendedOnList.some((item) => item.onPriorAuthList)
    ? (context.rules.prior_authorization.services.find((service) => service.required_documentation.length > 0)?.required_documentation ?? [])
    : [];
  return {
    ...state,
    decision,
    preAuthRef: certifies ? context.authorizationNumber : null,
    period: certifies ? { start, end } : null,
    moreInformation:
      decision === 'pended'
        ? documentation.length > 0
          ? documentation.map((entry) => entry.description).join('; ')
          : 'Clinical documentation supporting the medical necessity of the requested services'
        : null,
  };
}

export interface DecisionContext {
  rules: PayerRules;
  outcome: PriorAuthOutcome | null;
  /** The authorization number the payer issues (the authorization's own, so every answer names the same one). */
  authorizationNumber: string;
  now: number;
}

/** The first answer to a request: decided at once, pended, or an error. */
export function assess(summary: PasRequestSummary, context: DecisionContext): AuthorizationState {
  if (context.outcome === 'error') return { decision: 'error', items: [], preAuthRef: null, period: null, moreInformation: null, notes: [] };
  return settle({ items: summary.items.map((item) => itemState(item, context.rules, context.outcome)), notes: [] }, context);
}

/** The decision once a pend's review time is up (or it is advanced): each pended item gets the action it was to get. */
export function decidePended(state: AuthorizationState, context: Pick<DecisionContext, 'authorizationNumber' | 'rules' | 'now'>): AuthorizationState {
  if (state.decision !== 'pended') return state;
  const items = state.items.map((item) =>
    item.action === 'A4' && !item.cancelled ? { ...item, action: item.decidesTo ?? 'A1', decidesTo: null } : item,
  );
  return settle({ items, notes: state.notes }, context);
}

/**
 * A claim update (PAS 2.2.1): items it adds or changes are decided as a new request's would be, items
 * it cancels are withdrawn, and a Claim-level cancel (or every item cancelled) withdraws them all.
 */
export function applyUpdate(state: AuthorizationState, update: PasRequestSummary, context: DecisionContext): AuthorizationState {
  if (state.decision === 'error') return state;
  const items = new Map(state.items.map((item) => [item.sequence, item]));
  const notes = [...state.notes];
  if (update.cancelAll) {
    for (const [sequence, item] of items) items.set(sequence, { ...item, cancelled: true, decidesTo: null });
    notes.push('The provider cancelled the request.');
  } else {
    for (const item of update.items) {
      if (item.cancelled) {
        const known = items.get(item.sequence);
        if (known) items.set(item.sequence, { ...known, cancelled: true, decidesTo: null });
        notes.push(`The provider cancelled item ${item.sequence}.`);
      } else if (item.change || !items.has(item.sequence)) {
        notes.push(`The provider ${items.has(item.sequence) ? 'changed' : 'added'} item ${item.sequence}.`);
        items.set(item.sequence, itemState(item, context.rules, context.outcome));
      }
    }
  }
  return settle({ items: [...items.values()].sort((a, b) => a.sequence - b.sequence), notes }, context);
}

/** Hours the payer may take on a pend: its expedited or standard time frame (payer-rules.ts keeps both inside CMS-0057-F's). */
export function turnaroundHours(rules: PayerRules, expedited: boolean): number {
  return expedited ? rules.prior_authorization.expedited_turnaround_hours : rules.prior_authorization.standard_turnaround_hours;
}

/** How the organization's sandbox clock moves (the scenario runs' paces): `time_scale` simulated seconds per real second when accelerated. */
export interface PriorAuthPace {
  mode: 'realtime' | 'accelerated' | 'manual';
  time_scale: number | null;
}

/** A simulated day per real minute, as for scenario runs: a 7-day standard review takes 7 minutes. */
export const DEFAULT_PRIOR_AUTH_PACE: PriorAuthPace = { mode: 'accelerated', time_scale: 1440 };

/** Real milliseconds a review of `hours` takes at the pace; null at manual pace (it waits for an advance). */
export function reviewWaitMs(hours: number, pace: PriorAuthPace): number | null {
  if (pace.mode === 'manual') return null;
  const ms = (hours * 3_600_000) / (pace.mode === 'accelerated' ? (pace.time_scale ?? 1) : 1);
  return Math.max(1, Math.round(ms));
}
