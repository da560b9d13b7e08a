import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The layering of CONVENTIONS.md (Layers) is checked by `npm run lint`: Biome's noRestrictedImports,
 * one override per folder in biome.json. Each probe is a file placed in a scratch copy of the layout
 * with the project's biome.json, so the rule is exercised exactly as the lint runs it.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const biome = join(root, 'node_modules', '.bin', 'biome');
const scratch = mkdtempSync(join(tmpdir(), 'layering-'));
copyFileSync(join(root, 'biome.json'), join(scratch, 'biome.json'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const refused = [
  ['webhooks/upward.ts', "import { deliveryWorkflow as imported } from '../workflows/delivery/workflow';"],
  ['scenarios/upward.ts', "import type { ScenarioWorkflowInput as imported } from '../workflows/scenario/contract';"],
  ['catalog/upward.ts', "import { planScenario as imported } from '../scenarios/plan';"],
  ['fixtures/upward.ts', "import { eventCatalog as imported } from '../catalog/events';"],
  ['fhir/upward.ts', "import { smartUrls as imported } from '../smart/endpoints';"],
  ['api/interop/into-activities.ts', "import { createActivities as imported } from '../../activities';"],
  ['hl7/peer.ts', "import { mpiIndex as imported } from '../interop/mpi/mpi-index';"],
  ['platform/upward.ts', "import { createApp as imported } from '../api/app';"],
  ['privacy/upward.ts', "import { processHl7 as imported } from '../hl7/process';"],
  ['platform/into-privacy.ts', "import { guardSsn as imported } from '../privacy/guard';"],
  ['webhooks/vocabulary.ts', "import { newId as imported } from '../platform/ids';"],
];
const allowed = [
  ['webhooks/downward.ts', "import { newId as imported } from '../platform/ids';"],
  ['api/webhooks/downward.ts', "import { startDelivery as imported } from './start-delivery';"],
  ['workflows/delivery/by-type.ts', "import type { SandboxActivities as imported } from '../../activities';"],
  ['runtime/downward.ts', "import { createApp as imported } from '../api/app';"],
  ['hl7/into-privacy.ts', "import { guardSsn as imported } from '../privacy/guard';"],
  ['claims/into-privacy.ts', "import { guardSsn as imported } from '../privacy/guard';"],
  ['drizzle/vocabulary-user.ts', "import { DELIVERY_STATUSES as imported } from '../webhooks/vocabulary';"],
];

/** The layering messages Biome reports, by probe path: one lint run over every probe. */
function lintProbes(): Map<string, string[]> {
  for (const [path, source] of [...refused, ...allowed]) {
    mkdirSync(join(scratch, dirname(path!)), { recursive: true });
    writeFileSync(join(scratch, path!), `${source}\nexport const probe = imported;\n`);
  }
  const run = spawnSync(biome, ['lint', '--vcs-enabled=false', '--reporter=json', '.'], { cwd: scratch, encoding: 'utf8' });
  const report = JSON.parse(run.stdout) as { diagnostics: { category: string; message: string; location: { path: string } }[] };
  const messages = new Map<string, string[]>();
  for (const diagnostic of report.diagnostics) {
    if (diagnostic.category !== 'lint/style/noRestrictedImports') continue;
    messages.set(diagnostic.location.path, [...(messages.get(diagnostic.location.path) ?? []), diagnostic.message]);
  }
  return messages;
}
const reported = lintProbes();

describe('npm run lint enforces the layering', () => {
  it.each(refused)('refuses %s', (path, source) => {
    expect(reported.get(path!), source).toEqual([expect.stringMatching(/may import only from the layers below it|A vocabulary imports nothing/)]);
  });

  it.each(allowed)('allows %s', (path, source) => {
    expect(reported.get(path!), source).toBeUndefined();
  });
});
