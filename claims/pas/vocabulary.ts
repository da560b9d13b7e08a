/**
 * The prior-authorization domain's vocabulary (Da Vinci PAS `$submit`): the states an authorization
 * passes through and the outcomes a partner can ask for, written once for the schema, the API, the
 * activities and the workflow. It imports nothing, so every layer may use it (CONVENTIONS.md, Layers).
 */

/**
 * An authorization's decision as its last answer states it: `pended` (X12 278 A4) until decided,
 * then `certified` (A1 on every item), `not_certified` (A3), `modified` (A6 on an item), `partial`
 * (items decided differently), `cancelled` (every item withdrawn by a claim update), or `error`
 * (the payer could not process it).
 */
export const AUTHORIZATION_DECISIONS = ['pended', 'certified', 'not_certified', 'modified', 'partial', 'cancelled', 'error'] as const;
export type AuthorizationDecision = (typeof AUTHORIZATION_DECISIONS)[number];

/** Whether no later decision can follow (a pend is decided later; the others wait only for claim updates). */
export const isPended = (decision: AuthorizationDecision) => decision === 'pended';

/**
 * The outcomes a partner can choose, like a payment sandbox's test cards (docs/api/prior-authorization.md):
 * by request header, by test member id, or as the organization's default; without one, the payer rules decide.
 */
export const PRIOR_AUTH_OUTCOMES = ['approved', 'denied', 'pended_then_approved', 'pended_then_denied', 'modified', 'error'] as const;
export type PriorAuthOutcome = (typeof PRIOR_AUTH_OUTCOMES)[number];
