import type { Bundle, Claim, Coverage, Identifier, Patient } from 'fhir/r4';
import type { ProfileValidator } from '../../fhir/validation/profile-validator';
import { PAS_PROFILE } from '../prior-authorization';

/**
 * What a Da Vinci PAS `$submit` or `$inquire` request must be before the payer looks at it
 * (PAS 2.2.1, Claim-submit and Claim-inquiry): a request Bundle whose first entry is the Claim, the
 * Claim meeting the PAS Claim profile (or Claim-update, or Claim-inquiry), every resource meeting
 * the profiles it claims, and the Claim's references found in the Bundle. A request that is not is
 * answered with one OperationOutcome issue per problem, each naming the element as FHIRPath from
 * the request's root (PAS's error guidance), so a partner sees every problem at once.
 *
 * Pure and synchronous: it runs on a worker thread (./off-loop.ts), where validating a bundle takes
 * the CPU for a while, and in the tests.
 */

export type PasOperation = 'submit' | 'inquire';

const PAS = 'http://hl7.org/fhir/us/davinci-pas/StructureDefinition';
export const PAS_BUNDLE_PROFILE = {
  submit: `${PAS}/profile-pas-request-bundle`,
  inquire: `${PAS}/profile-pas-inquiry-request-bundle`,
  response: `${PAS}/profile-pas-response-bundle`,
  inquiryResponse: `${PAS}/profile-pas-inquiry-response-bundle`,
} as const;
export const PAS_CLAIM_UPDATE_PROFILE = `${PAS}/profile-claim-update`;
export const PAS_CLAIM_INQUIRY_PROFILE = `${PAS}/profile-claim-inquiry`;
export const PAS_CLAIM_INQUIRY_RESPONSE_PROFILE = `${PAS}/profile-claiminquiryresponse`;
const EXTENSION = {
  certificationType: `${PAS}/extension-certificationType`,
  infoChanged: `${PAS}/extension-infoChanged`,
  infoCancelled: `${PAS}/modifierextension-infoCancelled`,
  levelOfService: `${PAS}/extension-levelOfServiceCode`,
} as const;

/** X12 1322 certification type `3`: cancel. */
const CANCEL = '3';
/** X12 1338 level of service `U` (urgent) and `03` (emergency): the expedited time frame. */
const EXPEDITED_LEVELS = new Set(['U', '03']);
/** More than any PAS request needs (examples hold up to 10); keeps the checks' cost bounded. */
export const MAX_ENTRIES = 200;
/** The most issues one answer lists: enough to fix a request, bounded however broken it is. */
const MAX_ISSUES = 50;

export interface PasIssue {
  /** FHIRPath from the root of what was sent (`Bundle.entry[0].resource.item[0].category`). */
  expression: string;
  diagnostics: string;
  code: 'invalid' | 'structure' | 'required' | 'value' | 'not-found';
}

/** A business identifier, as `system|value` keys compare it. */
export interface BusinessIdentifier {
  system: string;
  value: string;
}

export interface PasItem {
  sequence: number;
  /** The first coding of productOrService. */
  service: { system: string | undefined; code: string | undefined; display: string | undefined };
  quantity: number | undefined;
  /** What a claim update does to this item: `added`, `changed`, or undefined (unchanged or an initial request). */
  change: 'added' | 'changed' | undefined;
  /** Withdrawn by this request (certification type 3, or the infoCancelled modifier). */
  cancelled: boolean;
}

/** What the payer needs from a conformant request, kept beside it (no patient content beyond the request itself). */
export interface PasRequestSummary {
  /** The Claim's business identifier: what the authorization is found by. */
  claim: BusinessIdentifier;
  /** For a claim update: the identifier of the Claim it updates (`Claim.related.claim`). */
  updates: BusinessIdentifier | null;
  /** The whole request is withdrawn (Claim-level certification type 3, or every item cancelled). */
  cancelAll: boolean;
  expedited: boolean;
  /** Member ids on the Coverage and Patient (test member ids pick an outcome). */
  memberIds: string[];
  /** Identifier values of the insurer (a sandbox payer's id or electronic payer id picks its rules). */
  insurerIdentifiers: string[];
  /** `system|value` identifiers of the requesting provider (the Subscription topic's org-identifier filter). */
  providerIdentifiers: string[];
  items: PasItem[];
}

export type PasCheck = { ok: true; bundle: Bundle; summary: PasRequestSummary } | { ok: false; issues: PasIssue[] };

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const canonical = (url: string) => url.split('|')[0]!;

/** The PAS request inside `body`: the Bundle itself, or the `resource` parameter of a Parameters resource. */
function unwrap(body: unknown): { bundle: Json; root: string } | PasIssue {
  if (!isObject(body))
    return {
      expression: '',
      code: 'structure',
      diagnostics: 'The body must be a FHIR resource: a PAS request Bundle (or a Parameters with it as `resource`).',
    };
  if (body.resourceType === 'Parameters') {
    const parameters = Array.isArray(body.parameter) ? body.parameter : [];
    const index = parameters.findIndex((parameter) => isObject(parameter) && parameter.name === 'resource');
    const resource = index === -1 ? undefined : (parameters[index] as Json).resource;
    if (!isObject(resource))
      return {
        expression: 'Parameters.parameter',
        code: 'required',
        diagnostics: 'A Parameters body needs a parameter named `resource` holding the PAS request Bundle.',
      };
    return { bundle: resource, root: `Parameters.parameter[${index}].resource` };
  }
  return { bundle: body, root: String(body.resourceType ?? 'Bundle') };
}

/** `Bundle.entry[0]…` as seen from where the Bundle was (`Parameters.parameter[0].resource.entry[0]…`). */
function rooted(root: string, location: string): string {
  if (root === 'Bundle' || !location.startsWith('Bundle')) return location;
  return `${root}${location.slice('Bundle'.length)}`;
}

/** Whether a reference names an entry of the Bundle: by fullUrl, by `Type/id`, or by an absolute URL ending in `Type/id`. */
function resolver(entries: Json[]): (reference: string) => Json | undefined {
  const byKey = new Map<string, Json>();
  for (const entry of entries) {
    const resource = entry.resource;
    if (!isObject(resource)) continue;
    if (typeof entry.fullUrl === 'string') byKey.set(entry.fullUrl, resource);
    if (typeof resource.id === 'string') byKey.set(`${String(resource.resourceType)}/${resource.id}`, resource);
  }
  return (reference) => byKey.get(reference) ?? byKey.get(reference.split('/').slice(-2).join('/'));
}

function identifierOf(identifiers: Identifier[] | undefined): BusinessIdentifier | undefined {
  const found = identifiers?.find((identifier) => typeof identifier.value === 'string' && identifier.value.length > 0);
  return found ? { system: found.system ?? '', value: found.value! } : undefined;
}

function codeOf(value: unknown): string | undefined {
  return isObject(value) && Array.isArray(value.coding) ? (value.coding[0] as { code?: string } | undefined)?.code : undefined;
}

function extensionValue(holder: { extension?: { url: string }[] }, url: string): unknown {
  const extension = holder.extension?.find((candidate) => candidate.url === url) as Json | undefined;
  return extension && Object.entries(extension).find(([key]) => key.startsWith('value'))?.[1];
}

/** Checks one PAS request; the validator is loaded once per thread (fhir/validation/profile-validator.ts). */
export function checkPasRequest(body: unknown, operation: PasOperation, validator: ProfileValidator): PasCheck {
  const unwrapped = unwrap(body);
  if ('diagnostics' in unwrapped) return { ok: false, issues: [unwrapped] };
  const { bundle, root } = unwrapped;
  const issues: PasIssue[] = [];
  const bundleProfile = PAS_BUNDLE_PROFILE[operation];
  if (bundle.resourceType !== 'Bundle')
    return {
      ok: false,
      issues: [
        { expression: root, code: 'structure', diagnostics: `The request must be a PAS request Bundle (got ${String(bundle.resourceType)}).` },
      ],
    };
  const entries = Array.isArray(bundle.entry) ? bundle.entry.filter(isObject) : [];
  if (entries.length === 0 || !isObject(entries[0]!.resource) || entries[0]!.resource.resourceType !== 'Claim')
    return {
      ok: false,
      issues: [
        {
          expression: rooted(root, 'Bundle.entry[0].resource'),
          code: 'required',
          diagnostics: 'The first entry of a PAS request Bundle must be the Claim.',
        },
      ],
    };
  if (entries.length > MAX_ENTRIES)
    return {
      ok: false,
      issues: [
        {
          expression: rooted(root, 'Bundle.entry'),
          code: 'invalid',
          diagnostics: `A PAS request holds at most ${MAX_ENTRIES} entries (got ${entries.length}).`,
        },
      ],
    };
  const claim = entries[0]!.resource as unknown as Claim;
  const claimed = (profiles: unknown) =>
    Array.isArray(profiles) ? profiles.filter((url): url is string => typeof url === 'string').map(canonical) : [];
  const bundleClaims = claimed((bundle.meta as Json | undefined)?.profile);
  if (bundleClaims.length > 0 && !bundleClaims.includes(bundleProfile))
    issues.push({
      expression: rooted(root, 'Bundle.meta.profile'),
      code: 'value',
      diagnostics: `The request Bundle claims ${bundleClaims.join(', ')}; $${operation} takes ${bundleProfile}.`,
    });
  const isUpdate = operation === 'submit' && Array.isArray(claim.related) && claim.related.length > 0;
  const allowed = operation === 'inquire' ? [PAS_CLAIM_INQUIRY_PROFILE] : [PAS_PROFILE.claim, PAS_CLAIM_UPDATE_PROFILE];
  const claimClaims = claimed(claim.meta?.profile);
  if (claimClaims.length > 0 && !claimClaims.some((url) => allowed.includes(url)))
    issues.push({
      expression: rooted(root, 'Bundle.entry[0].resource.meta.profile'),
      code: 'value',
      diagnostics: `The Claim claims ${claimClaims.join(', ')}; $${operation} takes a Claim meeting ${allowed.join(' or ')}.`,
    });
  const claimProfile = operation === 'inquire' ? PAS_CLAIM_INQUIRY_PROFILE : isUpdate ? PAS_CLAIM_UPDATE_PROFILE : PAS_PROFILE.claim;
  const found = validator.validate(bundle, {
    profiles: (location) => (location === 'Bundle' ? [bundleProfile] : location === 'Bundle.entry[0].resource' ? [claimProfile] : []),
  });
  for (const issue of found) {
    if (issue.severity === 'error')
      issues.push({
        expression: rooted(root, issue.location),
        code: 'invalid',
        diagnostics: `${issue.expression ? `${issue.expression}: ` : ''}${issue.text}`,
      });
  }
  const claims = entries.filter((entry) => isObject(entry.resource) && entry.resource.resourceType === 'Claim').length;
  if (claims > (isUpdate ? 2 : 1))
    issues.push({
      expression: rooted(root, 'Bundle.entry'),
      code: 'invalid',
      diagnostics: `A PAS request carries its Claim${isUpdate ? ' and the Claim it updates' : ''} only (found ${claims} Claims).`,
    });
  if (operation === 'submit' && claim.use !== 'preauthorization')
    issues.push({
      expression: rooted(root, 'Bundle.entry[0].resource.use'),
      code: 'value',
      diagnostics: `A prior-authorization request has use "preauthorization" (got ${JSON.stringify(claim.use)}).`,
    });
  const resolve = resolver(entries);
  const references: [string, unknown][] = [
    ['patient', claim.patient],
    ['insurer', claim.insurer],
    ['provider', claim.provider],
    ...(claim.insurance ?? []).map((insurance, index): [string, unknown] => [`insurance[${index}].coverage`, insurance.coverage]),
  ];
  for (const [path, value] of references) {
    const reference = isObject(value) ? value.reference : undefined;
    if (typeof reference === 'string' && !resolve(reference))
      issues.push({
        expression: rooted(root, `Bundle.entry[0].resource.${path}`),
        code: 'not-found',
        diagnostics: `Claim.${path.replace(/\[\d+\]/g, '')} references ${reference}, which is not an entry of the Bundle: PAS requests carry the resources their Claim references.`,
      });
  }
  const claimIdentifier = identifierOf(claim.identifier);
  if (!claimIdentifier)
    issues.push({
      expression: rooted(root, 'Bundle.entry[0].resource.identifier'),
      code: 'required',
      diagnostics: 'The Claim needs a business identifier with a value: the authorization is found by it.',
    });
  let updates: BusinessIdentifier | null = null;
  if (isUpdate) {
    const related = claim.related![0]!.claim;
    const original = typeof related?.reference === 'string' ? (resolve(related.reference) as Claim | undefined) : undefined;
    updates =
      identifierOf(original?.identifier) ??
      (related?.identifier?.value ? { system: related.identifier.system ?? '', value: related.identifier.value } : null) ??
      null;
    if (!updates)
      issues.push({
        expression: rooted(root, 'Bundle.entry[0].resource.related[0].claim'),
        code: 'not-found',
        diagnostics:
          'A claim update names the Claim it updates: a reference to that Claim, included in the Bundle with its identifier, or its identifier.',
      });
  }
  if (issues.length > 0) return { ok: false, issues: dedupe(issues) };

  const coverages = (claim.insurance ?? [])
    .map((insurance) => insurance.coverage?.reference && resolve(insurance.coverage.reference))
    .filter(isObject) as unknown as Coverage[];
  const patient = claim.patient?.reference ? (resolve(claim.patient.reference) as Patient | undefined) : undefined;
  const insurer = claim.insurer?.reference ? (resolve(claim.insurer.reference) as { identifier?: Identifier[] } | undefined) : undefined;
  const provider = claim.provider?.reference ? (resolve(claim.provider.reference) as { identifier?: Identifier[] } | undefined) : undefined;
  const items: PasItem[] = (claim.item ?? []).map((item) => {
    const coding = item.productOrService?.coding?.[0];
    const change = extensionValue(item, EXTENSION.infoChanged);
    return {
      sequence: item.sequence,
      service: { system: coding?.system, code: coding?.code, display: coding?.display ?? item.productOrService?.text },
      quantity: item.quantity?.value,
      change: change === 'added' || change === 'changed' ? change : undefined,
      cancelled:
        codeOf(extensionValue(item, EXTENSION.certificationType)) === CANCEL ||
        (item.modifierExtension ?? []).some((extension) => extension.url === EXTENSION.infoCancelled && extension.valueBoolean === true),
    };
  });
  const level = codeOf(extensionValue(claim, EXTENSION.levelOfService));
  return {
    ok: true,
    bundle: bundle as unknown as Bundle,
    summary: {
      claim: claimIdentifier!,
      updates,
      cancelAll:
        isUpdate &&
        (codeOf(extensionValue(claim, EXTENSION.certificationType)) === CANCEL ||
          (claim.status as string) === 'cancelled' ||
          items.every((item) => item.cancelled)),
      expedited: (level !== undefined && EXPEDITED_LEVELS.has(level)) || codeOf(claim.priority) === 'stat',
      memberIds: [
        ...coverages.flatMap((coverage) => [coverage.subscriberId, ...(coverage.identifier ?? []).map((identifier) => identifier.value)]),
        ...(patient?.identifier ?? []).map((identifier) => identifier.value),
      ].filter((value): value is string => typeof value === 'string'),
      insurerIdentifiers: (insurer?.identifier ?? [])
        .map((identifier) => identifier.value)
        .filter((value): value is string => typeof value === 'string'),
      providerIdentifiers: (provider?.identifier ?? [])
        .filter((identifier) => identifier.value)
        .map((identifier) => `${identifier.system ?? ''}|${identifier.value}`),
      items,
    },
  };
}

function dedupe(issues: PasIssue[]): PasIssue[] {
  const seen = new Set<string>();
  return issues
    .filter((issue) => {
      const key = `${issue.expression}\n${issue.diagnostics}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .slice(0, MAX_ISSUES);
}

/** The key an authorization is found by within its organization: the Claim's business identifier. */
export const identifierKey = (identifier: BusinessIdentifier) => `${identifier.system}|${identifier.value}`;
