import { readFileSync } from 'node:fs';

/** The product version, from package.json: shown in the OpenAPI document and the User-Agent. */
export const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
