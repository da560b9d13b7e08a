import type { ElementIssue } from '../operation-outcome';
import {
  BACKPORT_EXTENSIONS,
  ORG_IDENTIFIER_FILTER,
  PAYLOAD_CONTENTS,
  PAYLOAD_MIME_TYPES,
  type PayloadContent,
  type PayloadMimeType,
  SUBSCRIPTION_TOPICS,
  type SubscriptionTopicUrl,
} from './vocabulary';

/** One filter of a subscription: the topic's filter parameter, the value it must equal, and the text it was given as. */
export interface SubscriptionFilter {
  name: typeof ORG_IDENTIFIER_FILTER;
  value: string;
  /** The backport-filter-criteria string as the client wrote it, which the resource shows back. */
  text: string;
}

/** A Subscription as this server takes it: what it honours, normalised, from a resource a client sent. */
export interface SubscriptionRequest {
  topic: SubscriptionTopicUrl;
  filters: SubscriptionFilter[];
  endpoint: string;
  /** `channel.header` values, `Name: value` each, sent as HTTP headers with every notification. */
  headers: string[];
  payloadMime: PayloadMimeType;
  content: PayloadContent;
  heartbeatSeconds: number | null;
  end: Date | null;
  reason: string;
}

/** A heartbeat more often than this is accepted as this period (the backport lets a server accept a subscription with changes). */
export const MIN_HEARTBEAT_SECONDS = 60;
/** Bounds on what one subscription holds, so every one costs little to store, check and send. */
export const SUBSCRIPTION_LIMITS = { filters: 10, filterLength: 256, headers: 10, headerLength: 1024, endpointLength: 2048, reasonLength: 1024 };
/** The content level when the client names none: the least data (the backport asks servers to prefer the minimum). */
export const DEFAULT_PAYLOAD_CONTENT: PayloadContent = 'id-only';
const DEFAULT_REASON = 'Notifications of decided prior authorizations (Da Vinci PAS).';

// An RFC 9110 field name, then the value: no CR or LF, so a header can never split a request.
const HEADER = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}):[ \t]*([^\r\n]*)$/;
/** Headers the sender owns: a channel header may not replace the signature, the framing or the content type. */
const RESERVED_HEADERS = /^(host|content-length|content-type|transfer-encoding|connection|user-agent|webhook-.*|x-service-.*)$/i;
// The filter parameter named as the topic does (`orgIdentifier`) or as a FHIR search parameter would be (`org-identifier`).
const FILTER_NAMES = new Set(['orgIdentifier', ORG_IDENTIFIER_FILTER]);
const FILTER_PREFIX = /^[A-Z][A-Za-z]{0,63}\?/;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const extensionsOf = (element: unknown): Json[] => (isObject(element) && Array.isArray(element.extension) ? element.extension.filter(isObject) : []);

/**
 * Reads a Subscription a client POSTs: the topic, its filters, a rest-hook channel with its headers,
 * payload and content level, the heartbeat period and the end. Lenient where FHIR lets a server be
 * (a missing reason, payload MIME type or content level takes a default; status and id are the
 * server's to set; a heartbeat under MIN_HEARTBEAT_SECONDS is raised to it); every refusal is an
 * issue naming its element, all of them at once.
 */
export function readSubscriptionRequest(body: unknown): { request: SubscriptionRequest } | { issues: ElementIssue[] } {
  const issues: ElementIssue[] = [];
  const issue = (expression: string, diagnostics: string, code: ElementIssue['code'] = 'invalid') => issues.push({ code, diagnostics, expression });
  if (!isObject(body) || body.resourceType !== 'Subscription') {
    return {
      issues: [
        {
          code: 'invalid',
          expression: 'Subscription',
          diagnostics: 'The body must be a FHIR R4 Subscription resource (resourceType "Subscription").',
        },
      ],
    };
  }

  const criteria = typeof body.criteria === 'string' ? body.criteria.split('|')[0]! : undefined;
  const topic = SUBSCRIPTION_TOPICS.find((served) => served === criteria);
  if (!criteria) issue('Subscription.criteria', `criteria is required: the canonical URL of the topic, ${SUBSCRIPTION_TOPICS.join(' or ')}.`);
  else if (!topic)
    issue(
      'Subscription.criteria',
      `The topic ${criteria.slice(0, 200)} is not served here; the topics served are ${SUBSCRIPTION_TOPICS.join(', ')}.`,
      'not-supported',
    );

  const filters = readFilters(body._criteria, issue);

  const channel = isObject(body.channel) ? body.channel : undefined;
  if (!channel) issue('Subscription.channel', 'channel is required: a rest-hook channel with the endpoint notifications are POSTed to.');
  if (channel && channel.type !== 'rest-hook') {
    issue(
      'Subscription.channel.type',
      `Only rest-hook channels are served (got ${JSON.stringify(channel.type ?? null).slice(0, 64)}).`,
      'not-supported',
    );
  }
  const endpoint = typeof channel?.endpoint === 'string' ? channel.endpoint.trim() : '';
  if (channel && !endpoint) issue('Subscription.channel.endpoint', 'channel.endpoint is required: the https URL notifications are POSTed to.');
  else if (endpoint.length > SUBSCRIPTION_LIMITS.endpointLength)
    issue('Subscription.channel.endpoint', `The endpoint is longer than ${SUBSCRIPTION_LIMITS.endpointLength} characters.`);

  const headers = readHeaders(channel?.header, issue);

  let payloadMime: PayloadMimeType = 'application/fhir+json';
  if (channel?.payload !== undefined) {
    const mime = typeof channel.payload === 'string' ? channel.payload.split(';')[0]!.trim().toLowerCase() : '';
    const served = PAYLOAD_MIME_TYPES.find((type) => type === mime);
    if (served) payloadMime = served;
    else
      issue(
        'Subscription.channel.payload',
        `Notifications are sent as ${PAYLOAD_MIME_TYPES.join(' or ')} (got ${JSON.stringify(channel.payload).slice(0, 64)}).`,
        'not-supported',
      );
  }

  let content = DEFAULT_PAYLOAD_CONTENT;
  const contentExtensions = extensionsOf(channel?._payload).filter((extension) => extension.url === BACKPORT_EXTENSIONS.payloadContent);
  if (contentExtensions.length > 1) issue('Subscription.channel.payload.extension', 'backport-payload-content may appear once.');
  const contentCode = contentExtensions[0]?.valueCode;
  if (contentExtensions.length === 1) {
    const served = PAYLOAD_CONTENTS.find((code) => code === contentCode);
    if (served) content = served;
    else
      issue(
        'Subscription.channel.payload.extension',
        `backport-payload-content must be one of ${PAYLOAD_CONTENTS.join(', ')} (got ${JSON.stringify(contentCode ?? null).slice(0, 64)}).`,
      );
  }

  let heartbeatSeconds: number | null = null;
  const heartbeats = extensionsOf(channel).filter((extension) => extension.url === BACKPORT_EXTENSIONS.heartbeatPeriod);
  if (heartbeats.length > 1) issue('Subscription.channel.extension', 'backport-heartbeat-period may appear once.');
  if (heartbeats.length === 1) {
    const period = heartbeats[0]!.valueUnsignedInt;
    if (typeof period !== 'number' || !Number.isInteger(period) || period < 0 || period > 2_147_483_647)
      issue('Subscription.channel.extension', 'backport-heartbeat-period takes valueUnsignedInt: a whole number of seconds.');
    else if (period > 0) heartbeatSeconds = Math.max(period, MIN_HEARTBEAT_SECONDS);
  }

  let end: Date | null = null;
  if (body.end !== undefined) {
    const parsed =
      typeof body.end === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(body.end)
        ? new Date(body.end)
        : null;
    if (!parsed || Number.isNaN(parsed.getTime()))
      issue('Subscription.end', 'end must be a FHIR instant with a time zone, e.g. 2027-01-01T00:00:00Z.');
    else if (parsed.getTime() <= Date.now()) issue('Subscription.end', 'end is already past: a subscription must end in the future.');
    else end = parsed;
  }

  let reason = DEFAULT_REASON;
  if (body.reason !== undefined) {
    if (typeof body.reason !== 'string' || body.reason.trim() === '') issue('Subscription.reason', 'reason must be a non-empty string.');
    else if (body.reason.length > SUBSCRIPTION_LIMITS.reasonLength)
      issue('Subscription.reason', `reason is longer than ${SUBSCRIPTION_LIMITS.reasonLength} characters.`);
    else reason = body.reason;
  }

  if (issues.length > 0 || !topic) return { issues };
  return { request: { topic, filters, endpoint, headers, payloadMime, content, heartbeatSeconds, end, reason } };
}

/** `backport-filter-criteria` strings: `org-identifier=<value>`, also written `orgIdentifier=…` or `ClaimResponse?org-identifier=…`. */
function readFilters(
  criteriaElement: unknown,
  issue: (expression: string, diagnostics: string, code?: ElementIssue['code']) => void,
): SubscriptionFilter[] {
  const expression = 'Subscription.criteria.extension';
  const texts = extensionsOf(criteriaElement).filter((extension) => extension.url === BACKPORT_EXTENSIONS.filterCriteria);
  if (texts.length > SUBSCRIPTION_LIMITS.filters) {
    issue(expression, `At most ${SUBSCRIPTION_LIMITS.filters} filter criteria are accepted (got ${texts.length}).`, 'too-costly');
    return [];
  }
  const filters: SubscriptionFilter[] = [];
  for (const extension of texts) {
    const text = extension.valueString;
    if (typeof text !== 'string' || text.trim() === '' || text.length > SUBSCRIPTION_LIMITS.filterLength) {
      issue(
        expression,
        `backport-filter-criteria takes valueString: ${ORG_IDENTIFIER_FILTER}=<identifier>, at most ${SUBSCRIPTION_LIMITS.filterLength} characters.`,
      );
      continue;
    }
    for (const [name, value] of new URLSearchParams(text.trim().replace(FILTER_PREFIX, ''))) {
      if (!FILTER_NAMES.has(name)) {
        issue(
          expression,
          `The topic filters by ${ORG_IDENTIFIER_FILTER} only (written ${ORG_IDENTIFIER_FILTER}=<identifier>); ${JSON.stringify(name).slice(0, 64)} cannot be applied.`,
          'not-supported',
        );
      } else if (value.trim() === '') {
        issue(
          expression,
          `${ORG_IDENTIFIER_FILTER} needs a value: the requesting provider organization's identifier, as <value> or <system>|<value>.`,
        );
      } else {
        filters.push({ name: ORG_IDENTIFIER_FILTER, value: value.trim(), text: text.trim() });
      }
    }
  }
  return filters;
}

function readHeaders(value: unknown, issue: (expression: string, diagnostics: string, code?: ElementIssue['code']) => void): string[] {
  const expression = 'Subscription.channel.header';
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((header) => typeof header !== 'string')) {
    issue(expression, 'channel.header is a list of strings, each "Name: value".');
    return [];
  }
  if (value.length > SUBSCRIPTION_LIMITS.headers) {
    issue(expression, `At most ${SUBSCRIPTION_LIMITS.headers} channel headers are accepted (got ${value.length}).`, 'too-costly');
    return [];
  }
  const headers: string[] = [];
  for (const [index, header] of (value as string[]).entries()) {
    const match = header.length <= SUBSCRIPTION_LIMITS.headerLength ? HEADER.exec(header) : null;
    if (!match) issue(`${expression}[${index}]`, `Each header is "Name: value" on one line, at most ${SUBSCRIPTION_LIMITS.headerLength} characters.`);
    else if (RESERVED_HEADERS.test(match[1]!))
      issue(`${expression}[${index}]`, `${match[1]} is set by the sender on every notification and cannot be replaced.`);
    else headers.push(`${match[1]}: ${match[2]!.trim()}`);
  }
  return headers;
}

/** `system|value` or `value` as its two parts; a value without a system matches any system. */
function identifierParts(text: string): { system: string | null; value: string } {
  const bar = text.indexOf('|');
  return bar === -1 ? { system: null, value: text } : { system: text.slice(0, bar) || null, value: text.slice(bar + 1) };
}

/** Whether an event whose focus names these organization identifiers passes every filter (the backport ANDs them). */
export function filtersMatch(filters: readonly Pick<SubscriptionFilter, 'value'>[], orgIdentifiers: readonly string[]): boolean {
  const identifiers = orgIdentifiers.map(identifierParts);
  return filters.every((filter) => {
    const wanted = identifierParts(filter.value);
    return identifiers.some((identifier) => identifier.value === wanted.value && (wanted.system === null || identifier.system === wanted.system));
  });
}
