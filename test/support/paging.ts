import { expect } from 'vitest';
import type { TestService } from './service';

export type FhirJson = { resourceType: string; id: string; [field: string]: unknown };

/** Follows next_cursor to the end; returns every item and how many pages it took. */
export async function pageThrough(service: TestService, key: string, path: string): Promise<{ items: FhirJson[]; pages: number }> {
  const items: FhirJson[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const response = await service.call(cursor ? `${path}${separator}cursor=${cursor}` : path, { key });
    expect(response.status, `${path} ${response.body?.detail ?? ''}`).toBe(200);
    items.push(...response.body.data);
    cursor = response.body.next_cursor;
    pages += 1;
  } while (cursor);
  return { items, pages };
}
