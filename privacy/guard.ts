/**
 * The privacy guard (docs/api/privacy.md): recognises identifiers whose real and synthetic forms can
 * be told apart, and masks the real ones, keeping their last 4 characters as a statement would, before
 * anything is stored, mapped or sent. Pure and below every domain, so each inbound channel (HL7 v2,
 * FHIR inputs, the MPI match, the aggregator query, names) calls the same rules; the caller turns what
 * was found into its own warning (an HL7 ERR, an OperationOutcome issue) or, when asked, a refusal.
 *
 * Every check is a single pass over its input, no regular expression runs on request data, so a
 * value costs linear time whatever it holds. Names, birth dates and addresses cannot be judged (a real
 * one looks like a synthetic one) and are never touched.
 */

export const IDENTIFIER_KINDS = ['ssn', 'mbi', 'drivers_license', 'payment_card', 'email'] as const;
export type IdentifierKind = (typeof IDENTIFIER_KINDS)[number];

/** What a real identifier makes of a request: masked with a warning (the default), or the request refused. */
export const PRIVACY_MODES = ['mask', 'refuse'] as const;
export type PrivacyMode = (typeof PRIVACY_MODES)[number];

/** What each kind is called in a warning, and what the sandbox takes instead. */
export const IDENTIFIER_NAMES: Record<IdentifierKind, { name: string; instead: string }> = {
  ssn: {
    name: 'a Social Security number the SSA issues',
    instead: 'use a never-issued one (area 000, 666 or 900-999, group 00 or serial 0000, e.g. 999-12-3456)',
  },
  mbi: { name: 'a Medicare Beneficiary Identifier', instead: 'leave it out, or use a member id of the synthetic world' },
  drivers_license: { name: "a driver's licence number", instead: 'leave it out' },
  payment_card: { name: 'a payment card number', instead: 'leave it out' },
  email: {
    name: 'an e-mail address',
    instead: 'use a reserved domain: example.com, example.org, example.net, or *.example, *.test, *.invalid, *.localhost',
  },
};

/** One identifier found and masked in a value. */
export interface Finding {
  kind: IdentifierKind;
  /** The masked form, safe to show and store (the last 4 characters kept). */
  masked: string;
}

/** A value after the guard: the same string when nothing was found. */
export interface Guarded {
  value: string;
  findings: Finding[];
}

/**
 * The text of a warning (or a refusal) about one field: what it held, what it became, what to send
 * instead. It quotes only the masked forms, never the value sent.
 */
export function fieldFindingsMessage(where: string, findings: readonly Finding[], refused: boolean): string {
  const kinds = [...new Set(findings.map((finding) => finding.kind))];
  const names = kinds.map((kind) => IDENTIFIER_NAMES[kind].name).join(' and ');
  const instead = kinds.map((kind) => IDENTIFIER_NAMES[kind].instead).join('; ');
  if (refused) return `${where} holds ${names}; the sandbox takes synthetic data only, so it is refused: ${instead}`;
  const masked = findings.map((finding) => finding.masked).join(', ');
  return `${where} held ${names}; masked to ${masked} before anything was stored or sent (the sandbox takes synthetic data only: ${instead})`;
}

const isDigit = (code: number) => code >= 48 && code <= 57;
const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
const isAlphanumeric = (code: number) => isDigit(code) || isLetter(code);

/** Every letter and digit but the last `keep` becomes X; separators stay, so the shape is still recognisable. */
export function maskKeepingLast(value: string, keep = 4): string {
  let kept = 0;
  const out = value.split('');
  for (let index = out.length - 1; index >= 0; index--) {
    if (!isAlphanumeric(value.charCodeAt(index))) continue;
    if (kept < keep) kept++;
    else out[index] = 'X';
  }
  return out.join('');
}

/** The characters of `value` without the separators people write inside identifiers (dashes, spaces). */
function compact(value: string): string {
  let out = '';
  for (const character of value) if (character !== '-' && character !== ' ') out += character;
  return out;
}

const allDigits = (value: string) => value.length > 0 && [...value].every((character) => isDigit(character.charCodeAt(0)));

/**
 * Whether nine digits are a number the SSA never issues: area 000, 666 or 900-999, group 00, or
 * serial 0000 (the ranges synthetic generators use).
 */
export function isNeverIssuedSsn(digits: string): boolean {
  const area = digits.slice(0, 3);
  return area === '000' || area === '666' || area[0] === '9' || digits.slice(3, 5) === '00' || digits.slice(5) === '0000';
}

/** A value from a field that holds an SSN (PID-19, an identifier of type SS): masked when it is one the SSA issues. */
export function guardSsn(value: string): Guarded {
  const digits = compact(value.trim());
  if (digits.length !== 9 || !allDigits(digits) || isNeverIssuedSsn(digits)) return { value, findings: [] };
  const masked = maskKeepingLast(value);
  return { value: masked, findings: [{ kind: 'ssn', masked }] };
}

// The MBI's character classes (CMS, "Understanding the Medicare Beneficiary Identifier format"):
// C a digit 1-9, N a digit, A a letter but S, L, O, I, B and Z, X either A or N.
const MBI_LAYOUT = 'CAXNAXNAANN';
const MBI_EXCLUDED_LETTERS = 'SLOIBZ';

function fitsMbiPosition(character: string, position: string): boolean {
  const code = character.charCodeAt(0);
  const letter = isLetter(code) && !MBI_EXCLUDED_LETTERS.includes(character.toUpperCase());
  switch (position) {
    case 'C':
      return isDigit(code) && character !== '0';
    case 'N':
      return isDigit(code);
    case 'A':
      return letter;
    default:
      return letter || isDigit(code);
  }
}

/** Whether `value` (dashes allowed, as printed on the card: 1EG4-TE5-MK73) is a Medicare Beneficiary Identifier. */
export function isMbi(value: string): boolean {
  const characters = compact(value.trim());
  if (characters.length !== MBI_LAYOUT.length) return false;
  for (let index = 0; index < MBI_LAYOUT.length; index++) if (!fitsMbiPosition(characters[index]!, MBI_LAYOUT[index]!)) return false;
  return true;
}

/** A value from an identifier field: an MBI there is masked (no form of it is reserved for tests). */
export function guardMbi(value: string): Guarded {
  if (!isMbi(value)) return { value, findings: [] };
  const masked = maskKeepingLast(value);
  return { value: masked, findings: [{ kind: 'mbi', masked }] };
}

/** A driver's licence number (PID-20.1): no range is reserved for tests, so any value with a digit in it is masked. */
export function guardDriversLicense(value: string): Guarded {
  const hasDigit = [...value].some((character) => isDigit(character.charCodeAt(0)));
  if (!hasDigit) return { value, findings: [] };
  const masked = maskKeepingLast(value);
  return { value: masked, findings: [{ kind: 'drivers_license', masked }] };
}

/** The Luhn check digit test (ISO/IEC 7812) over a string of digits. */
export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return digits.length > 0 && sum % 10 === 0;
}

const RESERVED_SECOND_LEVEL = ['example.com', 'example.org', 'example.net'];
const RESERVED_TOP_LEVEL = ['example', 'test', 'invalid', 'localhost'];

/** Whether an e-mail domain is reserved for documentation and tests (RFC 2606, RFC 6761): example.com/.org/.net and their subdomains, *.example, *.test, *.invalid, *.localhost. */
export function isReservedDomain(domain: string): boolean {
  let name = domain.toLowerCase();
  while (name.endsWith('.')) name = name.slice(0, -1);
  const top = name.slice(name.lastIndexOf('.') + 1);
  if (RESERVED_TOP_LEVEL.includes(top)) return true;
  return RESERVED_SECOND_LEVEL.some((reserved) => name === reserved || name.endsWith(`.${reserved}`));
}

const isLocalPartCharacter = (code: number) => isAlphanumeric(code) || "._%+-'".includes(String.fromCharCode(code));
const isDomainCharacter = (code: number) => isAlphanumeric(code) || code === 46 /* . */ || code === 45; /* - */

/** A stretch of a text to replace by its masked form. */
interface Span {
  start: number;
  end: number;
  finding: Finding;
}

/** E-mail addresses outside reserved domains: each `@` is looked at once, scanning out to the characters an address allows. */
function emailSpans(text: string): Span[] {
  const spans: Span[] = [];
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    let start = at;
    while (start > 0 && isLocalPartCharacter(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < text.length && isDomainCharacter(text.charCodeAt(end))) end++;
    while (end > at + 1 && (text[end - 1] === '.' || text[end - 1] === '-')) end--;
    const domain = text.slice(at + 1, end);
    if (start === at || !domain.includes('.') || isReservedDomain(domain)) continue;
    const address = text.slice(start, end);
    // Only the top-level domain is kept: the rest of the domain can name a small employer.
    const topLevel = domain.slice(domain.lastIndexOf('.'));
    const masked = `${maskKeepingLast(address.slice(0, -topLevel.length), 0)}${topLevel}`;
    spans.push({ start, end, finding: { kind: 'email', masked } });
  }
  return spans;
}

/**
 * Runs of digits in free text: 13-19 of them passing the Luhn check (a payment card; groups of 3 or
 * more digits may be split by single spaces or dashes, as cards are printed), or 3-2-4 digits with
 * dashes that are an SSN the SSA issues.
 */
function digitRunSpans(text: string): Span[] {
  const spans: Span[] = [];
  let index = 0;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (!isDigit(code) || (index > 0 && isAlphanumeric(text.charCodeAt(index - 1)))) {
      index++;
      continue;
    }
    const start = index;
    const groups: number[] = [];
    let digits = '';
    let groupLength = 0;
    let end = index;
    for (;;) {
      while (end < text.length && isDigit(text.charCodeAt(end))) {
        digits += text[end];
        groupLength++;
        end++;
      }
      groups.push(groupLength);
      groupLength = 0;
      const separator = text[end];
      if ((separator === ' ' || separator === '-') && isDigit(text.charCodeAt(end + 1))) end++;
      else break;
    }
    index = end;
    if (end < text.length && isLetter(text.charCodeAt(end))) continue;
    const run = text.slice(start, end);
    const dashedSsn = groups.length === 3 && groups[0] === 3 && groups[1] === 2 && groups[2] === 4 && run[3] === '-' && run[6] === '-';
    if (dashedSsn) {
      if (!isNeverIssuedSsn(digits)) spans.push({ start, end, finding: { kind: 'ssn', masked: maskKeepingLast(run) } });
      continue;
    }
    const printedLikeACard = groups.length === 1 || groups.every((length) => length >= 3);
    if (printedLikeACard && digits.length >= 13 && digits.length <= 19 && passesLuhn(digits)) {
      spans.push({ start, end, finding: { kind: 'payment_card', masked: maskKeepingLast(run) } });
    }
  }
  return spans;
}

/** Words (letters, digits and dashes) that are Medicare Beneficiary Identifiers. */
function mbiSpans(text: string): Span[] {
  const spans: Span[] = [];
  let index = 0;
  while (index < text.length) {
    if (!isAlphanumeric(text.charCodeAt(index))) {
      index++;
      continue;
    }
    const start = index;
    while (index < text.length && (isAlphanumeric(text.charCodeAt(index)) || text[index] === '-')) index++;
    // At most 11 characters and two dashes: longer words are not looked at further.
    if (index - start <= 13 && isMbi(text.slice(start, index))) {
      const word = text.slice(start, index);
      spans.push({ start, end: index, finding: { kind: 'mbi', masked: maskKeepingLast(word) } });
    }
  }
  return spans;
}

function applySpans(text: string, spans: Span[]): Guarded {
  if (spans.length === 0) return { value: text, findings: [] };
  spans.sort((a, b) => a.start - b.start);
  let value = '';
  let from = 0;
  const findings: Finding[] = [];
  for (const span of spans) {
    // An address found first keeps its digits: they are masked with it.
    if (span.start < from) continue;
    value += text.slice(from, span.start) + span.finding.masked;
    findings.push(span.finding);
    from = span.end;
  }
  return { value: value + text.slice(from), findings };
}

/** E-mail addresses only: for any field, since an address is recognised wherever it stands. */
export function guardEmails(text: string): Guarded {
  if (!text.includes('@')) return { value: text, findings: [] };
  return applySpans(text, emailSpans(text));
}

/**
 * Free text (HL7 NTE and OBX text, FHIR notes and narratives, names typed by a partner): e-mail
 * addresses, payment card numbers, dashed SSNs the SSA issues and MBIs, each masked where it stands.
 */
export function guardFreeText(text: string): Guarded {
  const emails = text.includes('@') ? emailSpans(text) : [];
  return applySpans(text, [...emails, ...digitRunSpans(text), ...mbiSpans(text)]);
}
