import type { FhirResource } from 'fhir/r4';
import { expect } from 'vitest';
import type { TestService } from './service';
import { bearer } from './smart';
import { waitUntil } from './wait';

/** A Bulk Data client's side of an export, for tests: kick-off, polling, the manifest and its files. */

export const ASYNC = { prefer: 'respond-async', accept: 'application/fhir+json' };

export interface Manifest {
  transactionTime: string;
  request: string;
  requiresAccessToken: boolean;
  output: { type: string; url: string; count: number }[];
  error: { type: string; url: string; count: number }[];
}

/**
 * A GET with the token, as a Bulk Data client polls and downloads. Sent again once on a fresh socket
 * when the pooled one was closed by the server's keep-alive while the test was busy (see `call` in test/support/service.ts).
 */
export async function get(url: string, token?: string): Promise<Response> {
  const init = { headers: token ? bearer(token) : {} };
  try {
    return await fetch(url, init);
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code !== 'ECONNRESET') throw error;
    return fetch(url, init);
  }
}

/** Kicks off an export and answers its status URL (the 202's Content-Location). */
export async function kickOff(service: TestService, path: string, token: string): Promise<string> {
  const response = await service.call(path, { headers: { ...ASYNC, ...bearer(token) } });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return response.headers.get('content-location')!;
}

/** Polls the status URL as a client does until it stops answering 202, and answers that response. */
export async function finalStatus(statusUrl: string, token: string, timeoutMs = 60_000): Promise<Response> {
  return waitUntil(
    async () => {
      const polled = await get(statusUrl, token);
      return polled.status === 202 ? undefined : polled;
    },
    { what: `the export at ${statusUrl} to end`, timeoutMs, intervalMs: 200 },
  );
}

export async function manifestOf(statusUrl: string, token: string, timeoutMs?: number): Promise<Manifest> {
  const response = await finalStatus(statusUrl, token, timeoutMs);
  const body = await response.text();
  expect(response.status, body).toBe(200);
  return JSON.parse(body) as Manifest;
}

/** Every line of the files listed, each file read with the token and checked against its count. */
export async function linesOf(files: Manifest['output'], token: string): Promise<FhirResource[]> {
  const resources: FhirResource[] = [];
  for (const file of files) {
    const response = await get(file.url, token);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/fhir\+ndjson/);
    const lines = (await response.text()).split('\n').filter((line) => line.length > 0);
    expect(lines).toHaveLength(file.count);
    resources.push(...lines.map((line) => JSON.parse(line) as FhirResource));
  }
  return resources;
}
