import {
  type Finding,
  fieldFindingsMessage,
  type Guarded,
  guardDriversLicense,
  guardEmails,
  guardFreeText,
  guardMbi,
  guardSsn,
} from '../privacy/guard';
import type { Hl7Location, Hl7Problem } from './validate';

/**
 * The privacy guard over an HL7 v2 message (docs/api/privacy.md), before it is parsed, checked,
 * mapped or stored: the fields that carry an identifier the guard can judge are rewritten with the
 * real ones masked, so everything after (the Bundle, the envelope, an ACK that quotes a value) sees
 * only the masked form. One pass over the text: lines, then the fields named below, then their
 * components; every other field is looked at for e-mail addresses only.
 */

type Rule = (value: string) => Guarded;

/** A CX field (PID-2, PID-3, PID-4): the id in component 1, judged by its identifier type (component 5). */
function cxRule(components: string[]): Rule {
  const type = components[4] ?? '';
  if (type === 'SS') return guardSsn;
  if (type === 'DL') return guardDriversLicense;
  return guardMbi;
}

/** Per segment, per field: how component 1 of each repetition is judged (`cx`: by its type), or `text` for the whole field as free text. */
const FIELD_RULES: Record<string, Record<number, Rule | 'cx' | 'text'>> = {
  PID: { 2: 'cx', 3: 'cx', 4: 'cx', 19: guardSsn, 20: guardDriversLicense },
  NK1: { 33: 'cx', 37: guardSsn },
  GT1: { 12: guardSsn },
  // IN1-36 policy number and IN1-49 insured's id: where a Medicare payer's member id (the MBI) goes.
  IN1: { 36: guardMbi, 49: 'cx' },
  // IN2-2 insured's SSN; IN2-8 Medicare health insurance card number.
  IN2: { 2: guardSsn, 8: guardMbi },
  NTE: { 3: 'text' },
};

/** OBX-5 is free text when OBX-2 says it is text. */
const TEXT_VALUE_TYPES = new Set(['TX', 'FT', 'ST']);

export interface Hl7PrivacyFinding {
  location: Hl7Location;
  /** `PID-19`, as people name a field. */
  field: string;
  findings: Finding[];
}

export interface GuardedHl7 {
  /** The message with every real identifier masked; the text as sent when there was none. */
  text: string;
  /** One entry per field masked. */
  fields: Hl7PrivacyFinding[];
}

const START = /^[\uFEFF\s]+/;

/** The message as it may be kept and sent: real identifiers masked, one entry per field that held any. */
export function guardHl7(text: string): GuardedHl7 {
  const start = text.replace(START, '');
  if (!start.startsWith('MSH') || start.length < 8) return { text, fields: [] };
  const fieldSeparator = start[3]!;
  const component = start[4]!;
  const repetition = start[5]!;
  const lines = start.split(/\r\n|\n|\r/);
  const counts = new Map<string, number>();
  const fields: Hl7PrivacyFinding[] = [];
  let changed = false;
  const out = lines.map((line) => {
    const name = line.slice(0, 3);
    const sequence = (counts.get(name) ?? 0) + 1;
    counts.set(name, sequence);
    // MSH carries routing and the MLLP token, never patient content.
    if (name === 'MSH' || line[3] !== fieldSeparator) return line;
    const values = line.split(fieldSeparator);
    const rules = FIELD_RULES[name] ?? {};
    let lineChanged = false;
    for (let index = 1; index < values.length; index++) {
      const raw = values[index]!;
      if (raw === '') continue;
      const rule = name === 'OBX' && index === 5 && TEXT_VALUE_TYPES.has(values[2] ?? '') ? 'text' : rules[index];
      const guarded = guardField(raw, rule, component, repetition);
      if (guarded.findings.length === 0) continue;
      values[index] = guarded.value;
      lineChanged = true;
      fields.push({ location: { segment: name, sequence, field: index }, field: `${name}-${index}`, findings: guarded.findings });
    }
    if (!lineChanged) return line;
    changed = true;
    return values.join(fieldSeparator);
  });
  return changed ? { text: out.join('\r'), fields } : { text, fields };
}

function guardField(raw: string, rule: Rule | 'cx' | 'text' | undefined, component: string, repetition: string): Guarded {
  if (rule === undefined) return guardEmails(raw);
  if (rule === 'text') return guardFreeText(raw);
  const findings: Finding[] = [];
  const repetitions = raw.split(repetition).map((value) => {
    const components = value.split(component);
    const judge = rule === 'cx' ? cxRule(components) : rule;
    const id = judge(components[0] ?? '');
    const rest = guardEmails(components.slice(1).join(component));
    findings.push(...id.findings, ...rest.findings);
    return components.length > 1 ? `${id.value}${component}${rest.value}` : id.value;
  });
  return { value: repetitions.join(repetition), findings };
}

/**
 * The ACK's finding for each masked field, naming it in ERR-2: a warning (ERR-4 = W) on an accepted
 * message, or, when real identifiers are refused, an error that makes the answer AE. Table 0357 code
 * 102 (data type error: the field holds a kind of value the sandbox does not take) either way, as for
 * every other finding that strict mode turns into an error.
 */
export function privacyProblems(guarded: GuardedHl7, refuse: boolean): Hl7Problem[] {
  return guarded.fields.map(({ location, field, findings }) => ({
    code: 102,
    location,
    message: fieldFindingsMessage(field, findings, refuse),
    reject: false,
    severity: refuse ? 'E' : 'W',
  }));
}
