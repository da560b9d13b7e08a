import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A clone with nothing beside it runs the product and its tests (issue 33): no tracked file reads a
 * folder outside the checkout, and the FHIR packages the validator needs are in the repository.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outside = ['..', 'shared'].join('/');

describe('the repository is self-contained', () => {
  it('no tracked source, script or configuration names the folder beside the checkout', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n');
    const sources = tracked.filter((file) => /\.(ts|js|json|sh|yml)$/.test(file) || file === '.ci/run');
    const offenders = sources.filter((file) => existsSync(join(root, file)) && readFileSync(join(root, file), 'utf8').includes(outside));
    expect(offenders).toEqual([]);
  });

  it('the Da Vinci PAS package is kept in the repository', () => {
    expect(existsSync(join(root, 'fhir', 'packages', 'hl7.fhir.us.davinci-pas-2.2.1.tgz'))).toBe(true);
  });
});
