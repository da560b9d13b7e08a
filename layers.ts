import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The layers of CONVENTIONS.md (Layers), top to bottom: the one place they are written. A folder
 * imports from the rows below its own, never from its own row's other folders, never upward.
 * `npm run layers` writes the Biome overrides that enforce it into biome.json, and
 * test/platform/layering.unit.test.ts fails when biome.json is not what this table makes.
 * A new top-level folder is one entry here (a unit test refuses a source folder missing from it).
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['bin', 'bench', 'test'],
  ['runtime'],
  ['api', 'relay-receiver'],
  ['workflows'],
  ['activities'],
  ['scenarios'],
  ['catalog'],
  ['hl7', 'interop', 'smart'],
  ['webhooks'],
  ['fixtures'],
  ['claims'],
  ['fhir'],
  ['privacy'],
  ['platform'],
  ['drizzle'],
];

/** Imports the rows cannot say: a folder below that one above it must still not import, and why. */
export const ALSO_REFUSED: Readonly<Record<string, { folders: readonly string[]; why: string }>> = {
  api: {
    folders: ['activities'],
    why: 'activities/ run in the worker; the API starts work through a workflow and reads shared shapes from the domain.',
  },
};

/** The top rows import anything: nothing imports them, so they get no rule. */
const UNRESTRICTED = new Set(LAYERS[0]);

/** Each domain's vocabulary (a file named vocabulary.ts): it imports nothing, so every layer may import it. */
export function vocabularies(root: string): string[] {
  const found: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(folder, entry.name));
      else if (entry.name === 'vocabulary.ts') found.push(relative(root, join(folder, entry.name)));
    }
  };
  for (const folder of LAYERS.flat()) if (!UNRESTRICTED.has(folder)) walk(join(root, folder));
  return found.sort();
}

const importsOf = (folder: string) => [`**/../${folder}`, `**/../${folder}/**`];

/** The Biome overrides (noRestrictedImports) that enforce LAYERS: one per restricted folder, then the vocabularies'. */
export function layerOverrides(vocabularyFiles: readonly string[]): object[] {
  const overrides: object[] = [];
  LAYERS.forEach((row, index) => {
    const above = LAYERS.slice(0, index).flat();
    for (const folder of row) {
      if (UNRESTRICTED.has(folder)) continue;
      const also = ALSO_REFUSED[folder];
      const refused = [...above, ...row.filter((peer) => peer !== folder), ...(also?.folders ?? [])];
      const allowedVocabularies = vocabularyFiles
        .filter((file) => !file.startsWith(`${folder}/`) && refused.includes(file.split('/')[0]!))
        .map((file) => `!**/../${file.replace(/\.ts$/, '')}`);
      const message = `${folder}/ may import only from the layers below it (CONVENTIONS.md, Layers); not from ${refused.map((name) => `${name}/`).join(', ')}.`;
      overrides.push(restrict([`${folder}/**`], [...refused.flatMap(importsOf), ...allowedVocabularies], also ? `${message} ${also.why}` : message));
    }
  });
  overrides.push(
    restrict(
      vocabularyFiles,
      ['./**', '**/../**'],
      'A vocabulary imports nothing: every layer may import it, the drizzle schema included (CONVENTIONS.md, Layers).',
    ),
  );
  return overrides;
}

function restrict(includes: readonly string[], group: readonly string[], message: string) {
  return {
    includes,
    linter: { rules: { style: { noRestrictedImports: { level: 'error', options: { patterns: [{ group, message }] } } } } },
  };
}

/** Whether a Biome override is one of the layering rules (the others, e.g. the tests' own, are kept as written). */
export const isLayerOverride = (override: { linter?: { rules?: { style?: { noRestrictedImports?: unknown } } } }) =>
  override.linter?.rules?.style?.noRestrictedImports !== undefined;
