import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generateCorpus } from './generate';
import { NEGATIVES, SEGMENT_NEGATIVES } from './negatives';

/**
 * `npm run hl7:corpus [dir] [seed]`: writes the generated corpus (one `.hl7` file per message, as
 * sent, segment ends and all) and the hand-written negatives to `dir` (default `.data/hl7-corpus`,
 * which git ignores). The tests generate the same corpus in memory; this is for a look, or to
 * replay it against another listener. Every message is synthetic.
 */
const dir = resolve(process.argv[2] ?? '.data/hl7-corpus');
const seed = Number(process.argv[3] ?? 21);
const corpus = generateCorpus(seed);
mkdirSync(join(dir, 'well-formed'), { recursive: true });
mkdirSync(join(dir, 'negative'), { recursive: true });
for (const message of corpus) writeFileSync(join(dir, 'well-formed', `${message.id}.hl7`), message.text);
const negatives = [...NEGATIVES, ...SEGMENT_NEGATIVES];
for (const negative of negatives) writeFileSync(join(dir, 'negative', `${negative.name.replace(/[^a-z0-9]+/gi, '-')}.hl7`), negative.text);
writeFileSync(
  join(dir, 'index.json'),
  JSON.stringify(
    {
      seed,
      well_formed: corpus.map(({ id, version, type, controlId, features }) => ({ id, version, type, control_id: controlId, features })),
      negative: negatives.map(({ name, code, errorCode, location }) => ({ name, ack: code, error_code: errorCode, location })),
    },
    null,
    2,
  ),
);
console.log(`Wrote ${corpus.length} well-formed and ${negatives.length} negative synthetic HL7 v2 messages to ${dir}`);
