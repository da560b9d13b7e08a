import { createRequire } from 'node:module';

/**
 * A corpus of synthetic HL7 v2 messages generated from the standard's own machine-readable
 * definitions (the `hl7-dictionary` package: message structures, segments, fields, data types and
 * tables of v2.1 to 2.7.1), one message per trigger event of every version, with the variation real
 * feeds have: LF, CR and CRLF segment ends, a UTF-8 BOM, empty optional fields, repeated segments
 * and fields, Z-segments, custom delimiters, escape sequences and partial dates. Every value is
 * synthetic (made-up words, numbers and dates); no message comes from a real system.
 *
 * v2.8 is not in the dictionary. By hand, the corpus sends the 2.7.1 structures of the templated
 * triggers again stamped 2.8 and 2.8.2: that checks the version handling (MSH-12, the ACK's
 * version), not 2.8's own structure and field definitions, which the dictionary does not have.
 *
 * Deterministic for a seed: the tests generate the corpus at test time (nothing is committed);
 * `npm run hl7:corpus [dir]` writes it to files for a look or for other tools.
 */

interface FieldDefinition {
  datatype: string;
  desc: string;
  /** 2 = required, 1 = optional (other values: backward compatible, withdrawn). */
  opt: number;
  /** 1 = not repeating, 0 = unbounded, n = up to n. */
  rep: number;
  len?: number;
  table?: number | null;
}
interface StructureNode {
  name: string;
  min: number;
  /** 0 = unbounded. */
  max: number;
  children?: StructureNode[];
}
interface VersionDefinitions {
  fields: Record<string, { desc: string; subfields: FieldDefinition[] }>;
  segments: Record<string, { desc: string; fields: FieldDefinition[] }>;
  messages: Record<string, { desc: string; name: string; segments: { segments: StructureNode[] } }>;
}
interface Dictionary {
  definitions: Record<string, VersionDefinitions>;
  tables: Record<string, { desc: string; values: Record<string, string> }>;
}

const dictionary = createRequire(import.meta.url)('hl7-dictionary') as Dictionary;

/** The versions whose every trigger event the corpus holds (issue 21: 2.3 to 2.7.1), and the older ones it samples. */
export const CORPUS_VERSIONS = ['2.3', '2.3.1', '2.4', '2.5', '2.5.1', '2.6', '2.7', '2.7.1'] as const;
const OLDER_VERSIONS = ['2.1', '2.2'] as const;

export interface CorpusMessage {
  id: string;
  version: string;
  /** MSH-9.1^MSH-9.2. */
  type: string;
  controlId: string;
  text: string;
  /** The variations this message carries (segment ends, BOM, custom delimiters, Z-segment…). */
  features: string[];
}

interface Delimiters {
  field: string;
  component: string;
  repetition: string;
  escape: string;
  subcomponent: string;
}
const STANDARD: Delimiters = { field: '|', component: '^', repetition: '~', escape: '\\', subcomponent: '&' };
/** Delimiters interface engines are configured with besides the standard ones. */
const CUSTOM: Delimiters[] = [
  { field: '!', component: '`', repetition: '*', escape: '$', subcomponent: '=' },
  { field: '#', component: '^', repetition: '~', escape: '\\', subcomponent: '&' },
  { field: '|', component: ';', repetition: '@', escape: '?', subcomponent: '%' },
];

/** A seeded pseudo-random sequence (mulberry32), so every run generates the same corpus. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
  };
}
type Random = ReturnType<typeof random>;

const WORDS = ['Lakeside', 'Harbor', 'Maple', 'Synthetic', 'Ridge', 'North', 'Cedar', 'Willow', 'Summit', 'Brook', 'Aspen', 'Meadow'];
const FAMILY = ['Testperson', 'Sample', 'Fakename', 'Demo', 'Mockwell', 'Placeholder'];
const GIVEN = ['Ada', 'Ben', 'Cleo', 'Dev', 'Esme', 'Finn', 'Gus', 'Hana'];
const UNITS = [
  ['mg/dL', 'mg/dL', 'UCUM'],
  ['mmol/L', 'mmol/L', 'UCUM'],
  ['g/dL', 'g/dL', 'UCUM'],
  ['%', 'percent', 'UCUM'],
];
const LOINC = [
  ['718-7', 'Hemoglobin', 'LN'],
  ['2345-7', 'Glucose', 'LN'],
  ['2093-3', 'Cholesterol', 'LN'],
  ['4548-4', 'Hemoglobin A1c', 'LN'],
  ['8867-4', 'Heart rate', 'LN'],
];
const SAFE_CODE = /^[A-Za-z0-9._-]{1,12}$/;

/** A synthetic date/time at a precision real feeds send: a year, a month, a day, minutes, seconds with an offset. */
function dateTime(rng: Random, precision: 'date' | 'any' = 'any'): string {
  const year = rng.int(1940, 2025);
  const month = String(rng.int(1, 12)).padStart(2, '0');
  const day = String(rng.int(1, 28)).padStart(2, '0');
  const hour = String(rng.int(0, 23)).padStart(2, '0');
  const minute = String(rng.int(0, 59)).padStart(2, '0');
  const roll = rng.next();
  if (roll < 0.05) return `${year}`;
  if (roll < 0.1) return `${year}${month}`;
  if (precision === 'date' || roll < 0.4) return `${year}${month}${day}`;
  if (roll < 0.6) return `${year}${month}${day}${hour}${minute}`;
  if (roll < 0.8) return `${year}${month}${day}${hour}${minute}${String(rng.int(0, 59)).padStart(2, '0')}`;
  return `${year}${month}${day}${hour}${minute}00${rng.pick(['-0500', '+0100', '+0000', '-0800'])}`;
}

/** Text that may carry escape sequences for the message's own delimiters, as senders escape them. */
function text(rng: Random, d: Delimiters): string {
  const words = Array.from({ length: rng.int(1, 3) }, () => rng.pick(WORDS)).join(' ');
  if (!rng.chance(0.12)) return words;
  const e = d.escape;
  return `${words} ${e}${rng.pick(['F', 'S', 'T', 'R', 'E', 'X0A', '.br', 'H'])}${e} ${rng.pick(WORDS)}${rng.chance(0.3) ? `${e}N${e}` : ''}`;
}

function tableValue(rng: Random, table: number | null | undefined): string | undefined {
  const values = table ? dictionary.tables[String(table)]?.values : undefined;
  const codes = values ? Object.keys(values).filter((code) => SAFE_CODE.test(code)) : [];
  return codes.length ? rng.pick(codes) : undefined;
}

class MessageWriter {
  constructor(
    private readonly rng: Random,
    private readonly definitions: VersionDefinitions,
    private readonly d: Delimiters,
  ) {}

  /** A primitive value of data type `type`. */
  primitive(type: string, table: number | null | undefined, desc: string): string {
    const { rng, d } = this;
    switch (type) {
      case 'SI':
        return '1';
      case 'NM':
        return rng.chance(0.5) ? String(rng.int(1, 400)) : `${rng.int(0, 99)}.${rng.int(0, 9)}`;
      case 'DT':
        return dateTime(rng, 'date');
      case 'DTM':
      case 'TS':
        return dateTime(rng);
      case 'TM':
        return `${String(rng.int(0, 23)).padStart(2, '0')}${String(rng.int(0, 59)).padStart(2, '0')}`;
      case 'ID':
      case 'IS':
        return tableValue(rng, table) ?? rng.pick(['A', 'B', 'C']);
      case 'ST':
      case 'TX':
      case 'FT':
        if (/surname|family|last name/i.test(desc)) return rng.pick(FAMILY);
        if (/given|first name/i.test(desc)) return rng.pick(GIVEN);
        if (/\b(id|identifier|number)\b/i.test(desc)) return `SYN${rng.int(1000, 99999)}`;
        return text(rng, d);
      default:
        return tableValue(rng, table) ?? rng.pick(WORDS);
    }
  }

  /** A value of data type `type`: composite types by their components (subcomponents one level down). */
  value(type: string, table: number | null | undefined, desc: string, depth = 0): string {
    const composite = this.definitions.fields[type]?.subfields;
    if (type === 'TS' && depth > 0) return dateTime(this.rng);
    if (!composite?.length) return this.primitive(type, table, desc);
    if (depth >= 2) return this.primitive(composite[0]!.datatype, composite[0]!.table, composite[0]!.desc);
    const separator = depth === 0 ? this.d.component : this.d.subcomponent;
    const parts = composite.map((sub, index) => {
      const wanted = sub.opt === 2 || index === 0 || (index < 3 && this.rng.chance(0.7)) || this.rng.chance(0.12);
      return wanted ? this.value(sub.datatype, sub.table, sub.desc, depth + 1) : '';
    });
    while (parts.length > 1 && parts.at(-1) === '') parts.pop();
    return parts.join(separator);
  }

  field(definition: FieldDefinition): string {
    const { rng, d } = this;
    const required = definition.opt === 2;
    if (!required && !rng.chance(0.45)) return '';
    const repetitions = definition.rep !== 1 && rng.chance(0.15) ? 2 : 1;
    return Array.from({ length: repetitions }, () => this.value(definition.datatype, definition.table, definition.desc)).join(d.repetition);
  }

  /** OBX with OBX-5 in the type OBX-2 names (the dictionary says only "varies"). */
  observation(fields: FieldDefinition[], version: string): string[] {
    const { rng, d } = this;
    const coded = Number(version.slice(2, 3)) >= 5 ? 'CWE' : 'CE';
    const type = rng.pick(['NM', 'NM', 'NM', 'ST', 'TX', coded, 'SN', 'DT', 'FT', 'TS']);
    const [code, display, system] = rng.pick(LOINC);
    const unit = rng.pick(UNITS);
    const values = fields.map((definition) =>
      definition.opt === 2 || rng.chance(0.3) ? this.value(definition.datatype, definition.table, definition.desc) : '',
    );
    const value = (): string => {
      switch (type) {
        case 'NM':
          return `${rng.int(1, 300)}.${rng.int(0, 9)}`;
        case 'SN':
          return rng.pick([
            `>${d.component}60`,
            `${d.component}1${d.component}:${d.component}128`,
            `${d.component}10${d.component}-${d.component}20`,
          ]);
        case 'CWE':
        case 'CE':
          return ['260385009', 'Negative', 'SCT'].join(d.component);
        case 'DT':
          return dateTime(rng, 'date');
        case 'TS':
          return dateTime(rng);
        default:
          return text(rng, d);
      }
    };
    values[1] = type;
    values[2] = [code, display, system].join(d.component);
    values[4] = type === 'NM' && rng.chance(0.08) ? [value(), value()].join(d.repetition) : value();
    values[5] = type === 'NM' || type === 'SN' ? unit.join(d.component) : '';
    values[6] = type === 'NM' ? `${rng.int(1, 20)}-${rng.int(30, 90)}` : values[6]!;
    values[10] = rng.pick(['F', 'F', 'F', 'P', 'C', 'R']);
    return values;
  }

  segment(name: string, version: string): string {
    const definition = this.definitions.segments[name];
    if (!definition) return name;
    const fields = name === 'OBX' ? this.observation(definition.fields, version) : definition.fields.map((field) => this.field(field));
    if (name === 'PID') {
      // A patient feed always names its patient: PID-3 and PID-5 are required from 2.3 on.
      fields[2] ||= `SYN${this.rng.int(10000, 99999)}${this.d.component}${this.d.component}${this.d.component}SANDBOX${this.d.component}MR`;
      fields[4] ||= `${this.rng.pick(FAMILY)}${this.d.component}${this.rng.pick(GIVEN)}`;
    }
    while (fields.length > 0 && fields.at(-1) === '') fields.pop();
    return [name, ...fields].join(this.d.field);
  }
}

/** Segment names of a structure, walked with optional and repeated parts chosen by the seed. */
function walk(nodes: StructureNode[], rng: Random, out: string[], mapped: ReadonlySet<string>): void {
  for (const node of nodes) {
    // The dictionary has a few stray entries ("Gen", ","), not segments of the standard.
    if (node.name === 'MSH' || (!node.children && !/^[A-Z][A-Z0-9]{2}$/.test(node.name))) continue;
    const required = node.min >= 1;
    const likely = node.children ? 0.5 : mapped.has(node.name) ? 0.8 : 0.35;
    if (!required && !rng.chance(likely)) continue;
    const repeats = node.max !== 1 && rng.chance(0.25) ? 2 : 1;
    for (let index = 0; index < repeats; index++) {
      if (node.children) walk(node.children, rng, out, mapped);
      else out.push(node.name);
    }
  }
}

/** The segments hl7/to-fhir/ maps: the generator includes them more often, so the mapping is exercised. */
const MAPPED = new Set(
  'PID PD1 NK1 PV1 PV2 AL1 IAM DG1 PR1 GT1 IN1 IN2 MRG ORC OBR OBX NTE SPM RXA RXE RXO RXR TQ1 TXA SCH AIS AIG AIL AIP EVN FT1'.split(' '),
);

function generateMessage(rng: Random, version: string, stampedVersion: string, key: string, index: number): CorpusMessage {
  const definitions = dictionary.definitions[version]!;
  const structure = definitions.messages[key]!;
  const [code, event] = key.split('_') as [string, string];
  const features: string[] = [];
  const custom = rng.chance(0.1);
  const d = custom ? rng.pick(CUSTOM) : STANDARD;
  if (custom) features.push('custom delimiters');
  const writer = new MessageWriter(rng, definitions, d);
  const names: string[] = [];
  walk(structure.segments.segments, rng, names, MAPPED);
  const segments = names.map((name) => {
    const segment = writer.segment(name, stampedVersion);
    // EVN-1 names the trigger (the only place v2.1 senders name it).
    if (name === 'EVN') return [name, event, ...segment.split(d.field).slice(2)].join(d.field);
    return segment;
  });
  if (rng.chance(0.12)) {
    segments.splice(rng.int(0, segments.length), 0, ['ZPI', '1', ['LOCAL', 'synthetic'].join(d.component)].join(d.field));
    features.push('Z-segment');
  }
  const controlId = `SYN${String(index).padStart(5, '0')}`;
  const encoding = `${d.component}${d.repetition}${d.escape}${d.subcomponent}`;
  const messageType = stampedVersion === '2.3' || version === '2.1' || version === '2.2' ? [code, event] : [code, event, key];
  const enhanced = rng.chance(0.1);
  if (enhanced) features.push('enhanced mode');
  const msh = [
    'MSH',
    encoding,
    'SYNTHETIC-EHR',
    rng.pick(WORDS).toUpperCase(),
    'SANDBOX',
    'SYNTHETIC',
    `2025${String(rng.int(1, 12)).padStart(2, '0')}${String(rng.int(1, 28)).padStart(2, '0')}${String(rng.int(100000, 235959))}`,
    '',
    messageType.join(d.component),
    controlId,
    rng.pick(['P', 'P', 'P', 'T', 'D']),
    stampedVersion,
    ...(enhanced ? ['', '', 'AL', rng.pick(['NE', 'AL', 'ER'])] : []),
  ].join(d.field);
  const ending = rng.pick(['\r', '\r', '\r', '\n', '\r\n']);
  features.push(ending === '\r' ? 'CR' : ending === '\n' ? 'LF' : 'CRLF');
  const bom = rng.chance(0.05) ? '\uFEFF' : '';
  if (bom) features.push('BOM');
  const trailing = rng.chance(0.3) ? ending : '';
  return {
    id: `${stampedVersion}-${key}`,
    version: stampedVersion,
    type: `${code}^${event}`,
    controlId,
    text: `${bom}${[msh, ...segments].join(ending)}${trailing}`,
    features,
  };
}

/** Message definitions with a trigger (`ADT_A04`), not the bare `ACK`, `ORU` or `QRY` entries. */
const triggersOf = (version: string) =>
  Object.keys(dictionary.definitions[version]!.messages)
    .filter((key) => /^[A-Z][A-Z0-9]{2}_[A-Z0-9]{3}$/.test(key) && !key.startsWith('ACK'))
    .sort();

/** 2.7.1 structures sent stamped 2.8 (see above). */
const V28 = [
  'ADT_A01',
  'ADT_A03',
  'ADT_A04',
  'ADT_A08',
  'ADT_A40',
  'ORU_R01',
  'OML_O21',
  'ORM_O01',
  'SIU_S12',
  'MDM_T02',
  'VXU_V04',
  'RDE_O11',
  'DFT_P03',
];

/** The whole corpus for `seed`: every trigger event of 2.3 to 2.7.1, the triggers of 2.1 and 2.2, and a 2.8 set. */
export function generateCorpus(seed = 21): CorpusMessage[] {
  const rng = random(seed);
  const corpus: CorpusMessage[] = [];
  for (const version of [...OLDER_VERSIONS, ...CORPUS_VERSIONS]) {
    for (const key of triggersOf(version)) corpus.push(generateMessage(rng, version, version, key, corpus.length));
  }
  for (const key of V28.filter((candidate) => dictionary.definitions['2.7.1']!.messages[candidate])) {
    for (const stamped of ['2.8', '2.8.2']) corpus.push(generateMessage(rng, '2.7.1', stamped, key, corpus.length));
  }
  return corpus;
}

/** Every trigger event (`ADT^A04`) of the versions 2.3 to 2.7.1, for checking the corpus covers them. */
export function triggerEventsOfStandard(): Set<string> {
  return new Set(CORPUS_VERSIONS.flatMap((version) => triggersOf(version).map((key) => key.replace('_', '^'))));
}
