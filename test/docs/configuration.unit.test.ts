import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config';

const root = resolve(import.meta.dirname, '../..');

describe('docs/operations/configuration.md', () => {
  it('documents every variable the service reads with a default', () => {
    const page = readFileSync(join(root, 'docs/operations/configuration.md'), 'utf8');
    // With an empty environment every variable that has a default is in the answer; the optional
    // ones (DATABASE_URL, TEMPORAL_ADDRESS, …) are absent, and documented by hand beside them.
    const variables = Object.keys(loadConfig({}));
    expect(variables.length).toBeGreaterThan(30);
    expect(variables.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });
});
