import type { ClaimResponseItemAdjudication, ClaimResponseTotal, CodeableConcept, Money } from 'fhir/r4';
import { CARC, type CarcKey, type Code, concept, SYSTEM } from '../fhir/terminology';
import { type PayerRules, requiresPriorAuth } from './payer-rules';

/**
 * The one claim adjudication engine: the synthetic world's revenue cycle (fixtures/revenue-cycle.ts)
 * and scenario runs (scenarios/content.ts) both price claims here, so one payer gives one member
 * share for the same service. Per line, in this order: a claim-level or line-level submission error
 * denies it; a service on the payer's prior-authorization list without an approved authorization on
 * file is denied (CARC 197), line by line; the allowed amount is the payer's share of charges;
 * preventive care, vaccines and laboratory tests are covered in full where the plan says so; an
 * office visit carries the primary-care or specialist copay and an emergency visit the emergency
 * copay (by visit kind); anything else meets the deductible first (tracked through the member's year),
 * then coinsurance, filed as coinsurance (CARIN Blue Button's adjudication code, not `copay`).
 */

/** Where and whom the member saw: decides which copay an evaluation and management line carries. */
export const VISIT_KINDS = ['primary_care', 'specialist', 'emergency', 'inpatient', 'outpatient_hospital'] as const;
export type VisitKind = (typeof VISIT_KINDS)[number];

/** A professional claim (837P, CMS-1500) bills a clinician's services; an institutional one (837I, UB-04) a facility's. */
export type ClaimKind = 'professional' | 'institutional';

/** CARIN Blue Button's adjudication codes, for the amounts R4's own adjudication code system has no code for. */
const CARIN_ADJUDICATION = 'http://hl7.org/fhir/us/carin-bb/CodeSystem/C4BBAdjudication';

export const ADJUDICATION_CATEGORY = {
  submitted: concept({ system: SYSTEM.adjudication, code: 'submitted', display: 'Submitted Amount' }),
  eligible: concept({ system: SYSTEM.adjudication, code: 'eligible', display: 'Eligible Amount' }),
  deductible: concept({ system: SYSTEM.adjudication, code: 'deductible', display: 'Deductible' }),
  copay: concept({ system: SYSTEM.adjudication, code: 'copay', display: 'CoPay' }),
  coinsurance: concept({ system: CARIN_ADJUDICATION, code: 'coinsurance', display: 'Co-insurance' }),
  memberLiability: concept({ system: CARIN_ADJUDICATION, code: 'memberliability', display: 'Member liability' }),
  benefit: concept({ system: SYSTEM.adjudication, code: 'benefit', display: 'Benefit Amount' }),
} as const;

export function claimTypeConcept(kind: ClaimKind): CodeableConcept {
  return kind === 'institutional'
    ? concept({ system: SYSTEM.claimType, code: 'institutional', display: 'Institutional' })
    : concept({ system: SYSTEM.claimType, code: 'professional', display: 'Professional' });
}

export interface LineToAdjudicate {
  code: Code;
  unitCharge: number;
  quantity: number;
  /** The facility's revenue code (NUBC): every institutional line has one, a professional line none. */
  revenue?: Code;
}

export interface ClaimToAdjudicate {
  rules: PayerRules;
  kind: ClaimKind;
  visit: VisitKind;
  /** The calendar year of service, whose deductible the claim draws on. */
  serviceYear: string;
  lines: LineToAdjudicate[];
  /** The approved authorization on file for the claim's services (its number), if any. */
  authorization?: string | undefined;
  /** A claim-level submission error that denies every line (CARC 16, 27, 29, …). */
  claimDenial?: CarcKey | undefined;
  /** Line-level submission errors, by line index, that deny one line each. */
  lineDenials?: ReadonlyMap<number, CarcKey> | undefined;
}

export interface AdjudicatedLine {
  sequence: number;
  line: LineToAdjudicate;
  charge: number;
  allowed: number;
  deductible: number;
  coinsurance: number;
  copay: number;
  /** What the member owes on this line: deductible + coinsurance + copay. */
  memberShare: number;
  paid: number;
  denial: CarcKey | undefined;
  adjudication: ClaimResponseItemAdjudication[];
}

export interface AdjudicatedClaim {
  lines: AdjudicatedLine[];
  charge: number;
  allowed: number;
  memberShare: number;
  paid: number;
  outcome: 'paid' | 'partially_paid' | 'denied';
  disposition: string;
  total: ClaimResponseTotal[];
}

/** Tracks one member's deductible through each year as claims are adjudicated in date order. */
export class DeductibleTracker {
  private readonly used = new Map<string, number>();

  usedIn(year: string): number {
    return this.used.get(year) ?? 0;
  }

  take(year: string, wanted: number, annual: number): number {
    const taken = cents(Math.min(wanted, Math.max(0, annual - this.usedIn(year))));
    this.used.set(year, cents(this.usedIn(year) + taken));
    return taken;
  }
}

const cents = (value: number) => Math.round(value * 100) / 100;

export function usd(value: number): Money {
  return { value: cents(value), currency: 'USD' };
}

// Code ranges of CPT: office or outpatient E/M, emergency department E/M, any E/M, preventive medicine.
const isOfficeVisit = (code: string) => /^992(0[2-5]|1[1-5])$/.test(code);
const isEmergencyVisit = (code: string) => /^9928[1-5]$/.test(code);
const isEvaluationAndManagement = (code: string) => /^99[2-4]\d\d$/.test(code);

/** Preventive visits, vaccines and their administration, and laboratory tests (with the draw). */
function isPreventiveOrLab(code: string): boolean {
  return /^99(38|39)\d$/.test(code) || /^90(4[67]|6|7)\d+$/.test(code) || /^(36415|8\d{4})$/.test(code);
}

/** The copay a visit of this kind carries under these rules (what the eligibility response quotes). */
export function copayFor(rules: PayerRules, visit: VisitKind): number {
  const costSharing = rules.eligibility.cost_sharing;
  if (visit === 'emergency') return costSharing.emergency_copay;
  if (visit === 'primary_care') return costSharing.primary_care_copay;
  return costSharing.specialist_copay;
}

function carcReason(key: CarcKey): CodeableConcept {
  return concept({ system: SYSTEM.carc, code: CARC[key].code, display: CARC[key].description });
}

/** The CARC key of a code (`197` → `authorizationAbsent`), for callers holding the code. */
export function carcKeyOf(code: string): CarcKey | undefined {
  return (Object.keys(CARC) as CarcKey[]).find((key) => CARC[key].code === code);
}

function checkLines(claim: ClaimToAdjudicate): void {
  for (const line of claim.lines) {
    if (claim.kind === 'institutional' && isEvaluationAndManagement(line.code.code))
      throw new Error(
        `${line.code.code} is a clinician's evaluation and management service: it belongs on a professional claim, not an institutional one`,
      );
    if (claim.kind === 'institutional' && !line.revenue) throw new Error(`An institutional line needs a revenue code (${line.code.code} has none)`);
    if (claim.kind === 'professional' && line.revenue) throw new Error(`A professional line carries no revenue code (${line.code.code})`);
  }
}

function adjudicateLine(claim: ClaimToAdjudicate, line: LineToAdjudicate, index: number, deductibles: DeductibleTracker): AdjudicatedLine {
  const { rules } = claim;
  const costSharing = rules.eligibility.cost_sharing;
  const charge = cents(line.unitCharge * line.quantity);
  const denial: CarcKey | undefined =
    claim.claimDenial ??
    claim.lineDenials?.get(index) ??
    (requiresPriorAuth(rules, line.code.code) && !claim.authorization ? 'authorizationAbsent' : undefined);
  const allowed = denial ? 0 : cents((charge * rules.claims.allowed_percent_of_charges) / 100);
  let deductible = 0;
  let coinsurance = 0;
  let copay = 0;
  if (!denial && !(costSharing.preventive_covered_in_full && isPreventiveOrLab(line.code.code))) {
    if (isOfficeVisit(line.code.code)) copay = Math.min(allowed, copayFor(rules, claim.visit === 'primary_care' ? 'primary_care' : 'specialist'));
    else if (isEmergencyVisit(line.code.code)) copay = Math.min(allowed, copayFor(rules, 'emergency'));
    else {
      deductible = deductibles.take(claim.serviceYear, allowed, costSharing.annual_deductible);
      coinsurance = cents(((allowed - deductible) * costSharing.coinsurance_percent) / 100);
    }
  }
  const memberShare = cents(deductible + coinsurance + copay);
  const paid = cents(allowed - memberShare);
  const adjudication: ClaimResponseItemAdjudication[] = [
    { category: ADJUDICATION_CATEGORY.submitted, amount: usd(charge) },
    // The contractual write-off (CARC 45) is implied by submitted minus eligible; only denials carry a reason.
    denial
      ? { category: ADJUDICATION_CATEGORY.eligible, reason: carcReason(denial), amount: usd(0) }
      : { category: ADJUDICATION_CATEGORY.eligible, amount: usd(allowed) },
    ...(deductible > 0 ? [{ category: ADJUDICATION_CATEGORY.deductible, amount: usd(deductible) }] : []),
    ...(coinsurance > 0 ? [{ category: ADJUDICATION_CATEGORY.coinsurance, amount: usd(coinsurance) }] : []),
    ...(copay > 0 ? [{ category: ADJUDICATION_CATEGORY.copay, amount: usd(copay) }] : []),
    ...(memberShare > 0 ? [{ category: ADJUDICATION_CATEGORY.memberLiability, amount: usd(memberShare) }] : []),
    { category: ADJUDICATION_CATEGORY.benefit, amount: usd(paid) },
  ];
  return { sequence: index + 1, line, charge, allowed, deductible, coinsurance, copay, memberShare, paid, denial, adjudication };
}

/** Adjudicates a claim's lines in order, drawing on (and updating) the member's deductible for the year. */
export function adjudicateClaim(claim: ClaimToAdjudicate, deductibles: DeductibleTracker): AdjudicatedClaim {
  checkLines(claim);
  const lines = claim.lines.map((line, index) => adjudicateLine(claim, line, index, deductibles));
  const sum = (pick: (line: AdjudicatedLine) => number) => cents(lines.reduce((total, line) => total + pick(line), 0));
  const denied = lines.filter((line) => line.denial);
  const outcome = denied.length === 0 ? 'paid' : denied.length === lines.length ? 'denied' : 'partially_paid';
  const disposition =
    outcome === 'denied'
      ? `Claim denied: ${CARC[denied[0]!.denial!].description}`
      : outcome === 'partially_paid'
        ? `Claim partially paid: ${denied.map((line) => `line ${line.sequence} (${line.line.code.code}) denied, CARC ${CARC[line.denial!].code}`).join('; ')}`
        : 'Claim settled as per contract';
  const amounts = {
    charge: sum((line) => line.charge),
    allowed: sum((line) => line.allowed),
    deductible: sum((line) => line.deductible),
    coinsurance: sum((line) => line.coinsurance),
    copay: sum((line) => line.copay),
    memberShare: sum((line) => line.memberShare),
    paid: sum((line) => line.paid),
  };
  const total: ClaimResponseTotal[] = [
    { category: ADJUDICATION_CATEGORY.submitted, amount: usd(amounts.charge) },
    { category: ADJUDICATION_CATEGORY.eligible, amount: usd(amounts.allowed) },
    ...(amounts.deductible > 0 ? [{ category: ADJUDICATION_CATEGORY.deductible, amount: usd(amounts.deductible) }] : []),
    ...(amounts.coinsurance > 0 ? [{ category: ADJUDICATION_CATEGORY.coinsurance, amount: usd(amounts.coinsurance) }] : []),
    ...(amounts.copay > 0 ? [{ category: ADJUDICATION_CATEGORY.copay, amount: usd(amounts.copay) }] : []),
    ...(amounts.memberShare > 0 ? [{ category: ADJUDICATION_CATEGORY.memberLiability, amount: usd(amounts.memberShare) }] : []),
    { category: ADJUDICATION_CATEGORY.benefit, amount: usd(amounts.paid) },
  ];
  return {
    lines,
    charge: amounts.charge,
    allowed: amounts.allowed,
    memberShare: amounts.memberShare,
    paid: amounts.paid,
    outcome,
    disposition,
    total,
  };
}
