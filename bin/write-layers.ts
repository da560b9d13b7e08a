import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isLayerOverride, layerOverrides, vocabularies } from '../layers';

/** `npm run layers`: writes the layering rules of layers.ts into biome.json (its other settings kept), formatted as Biome writes it. */
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const path = join(root, 'biome.json');
const biome = JSON.parse(readFileSync(path, 'utf8')) as { overrides?: Parameters<typeof isLayerOverride>[0][] };
const kept = (biome.overrides ?? []).filter((override) => !isLayerOverride(override));
biome.overrides = [...kept, ...layerOverrides(vocabularies(root))];
writeFileSync(path, `${JSON.stringify(biome, null, 2)}\n`);
const formatted = spawnSync(join(root, 'node_modules', '.bin', 'biome'), ['format', '--write', 'biome.json'], { cwd: root, stdio: 'inherit' });
process.exit(formatted.status ?? 1);
