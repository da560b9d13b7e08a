import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DOCS_ROUTER = fileURLToPath(new URL('../../api/http/docs.ts', import.meta.url));

/**
 * Swagger UI's browser bundles (4 MB of JavaScript) are files /docs serves, never code the service
 * runs: loaded, they cost `npm start` about 9 MiB of heap for as long as it runs (docs/benchmarks.md).
 * A process of its own, so no other test's imports count.
 */
describe('the API reference page', () => {
  it('serves Swagger UI from its folder without loading its browser bundles into the process', () => {
    const script = `
      const { createRequire } = await import('node:module');
      const { docsRouter } = await import(${JSON.stringify(DOCS_ROUTER)});
      docsRouter({});
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes('swagger-ui-dist'));
      console.log(JSON.stringify(loaded.map((path) => path.slice(path.lastIndexOf('/') + 1))));`;
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual(['absolute-path.js']);
  });
});
