import { type Finding, type Guarded, guardDriversLicense, guardEmails, guardFreeText, guardMbi, guardSsn } from './guard';

/**
 * The privacy guard over JSON inputs (FHIR resources, and the plain demographics the MPI and the
 * aggregator take): identifiers judged by what they say they are, e-mail addresses wherever they
 * stand, and free-text elements scanned for card numbers, SSNs and MBIs. One pass over the value.
 */

/** A finding and where it was, as a FHIRPath-like location (`Patient.identifier[0].value`). */
export interface LocatedFinding extends Finding {
  path: string;
}

export interface GuardedJson<T> {
  value: T;
  findings: LocatedFinding[];
}

const SSN_SYSTEM = 'http://hl7.org/fhir/sid/us-ssn';
const MBI_SYSTEM = 'http://hl7.org/fhir/sid/us-mbi';

/** Elements that hold prose a person typed, where a card number or an SSN can hide. */
const FREE_TEXT_KEYS = new Set(['text', 'div', 'valueString', 'valueMarkdown', 'comment', 'description', 'note', 'name', 'client_name', 'display']);

type IdentifierRule = (value: string) => Guarded;

/** How an identifier's value is judged: by its system or its v2 type code (SS, MC, DL), else only as a possible MBI. */
function identifierRule(identifier: Record<string, unknown>): IdentifierRule {
  const system = typeof identifier.system === 'string' ? identifier.system : '';
  const codes = codesOf(identifier.type);
  if (system === SSN_SYSTEM || codes.includes('SS') || codes.includes('SB')) return guardSsn;
  if (system === MBI_SYSTEM || codes.includes('MC')) return guardMbi;
  if (codes.includes('DL')) return guardDriversLicense;
  return guardMbi;
}

function codesOf(concept: unknown): string[] {
  if (!concept || typeof concept !== 'object') return [];
  const coding = (concept as { coding?: unknown }).coding;
  if (!Array.isArray(coding)) return [];
  return coding.map((entry) => (entry && typeof entry === 'object' ? String((entry as { code?: unknown }).code ?? '') : ''));
}

/** The value with every real identifier masked, and where each was; unchanged parts are the same objects. */
export function guardJson<T>(value: T, root: string): GuardedJson<T> {
  const findings: LocatedFinding[] = [];
  const visit = (node: unknown, path: string, key: string, rule?: IdentifierRule): unknown => {
    if (typeof node === 'string') {
      const guarded = rule ? rule(node) : FREE_TEXT_KEYS.has(key) ? guardFreeText(node) : guardEmails(node);
      // A ruled value is also looked at for an e-mail address (a value field can hold anything).
      const again = rule && guarded.findings.length === 0 ? guardEmails(node) : undefined;
      const result = again ?? guarded;
      for (const finding of result.findings) findings.push({ ...finding, path });
      return result.value;
    }
    if (Array.isArray(node)) {
      let changed = false;
      const out = node.map((item, index) => {
        const next = visit(item, `${path}[${index}]`, key);
        if (next !== item) changed = true;
        return next;
      });
      return changed ? out : node;
    }
    if (node && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      const identifier = key === 'identifier' || key === 'identifiers';
      const ruled = identifier ? identifierRule(record) : undefined;
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [name, child] of Object.entries(record)) {
        const next = visit(child, `${path}.${name}`, name, ruled && name === 'value' ? ruled : undefined);
        if (next !== child) changed = true;
        out[name] = next;
      }
      return changed ? out : node;
    }
    return node;
  };
  // A bare value is judged by the name it was sent under (`body.name` is free text).
  return { value: visit(value, root, root.slice(root.lastIndexOf('.') + 1)) as T, findings };
}
