import { createHash } from 'node:crypto';
import type { BundleEntry, FhirResource, Reference } from 'fhir/r4';
import { SYNTHETIC_TAG } from '../../fixtures/synthetic';

/** Every resource of a mapped message is tagged synthetic: the sandbox takes synthetic data only. */
export const META = { tag: [SYNTHETIC_TAG] };

/** The Bundle's entries as they are mapped, each with an id derived from the message, so the same message maps to the same Bundle. */
export class BundleBuilder {
  private readonly added: { id: string; resource: FhirResource }[] = [];
  constructor(private readonly seed: string) {}

  /** A deterministic uuid (name-based, version 5 layout) from the message and `key`. */
  idFor(key: string): string {
    const hash = createHash('sha256').update(`${this.seed}|${key}`).digest('hex');
    const variant = ((Number.parseInt(hash.charAt(16), 16) & 0x3) | 0x8).toString(16);
    return `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-${variant}${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  }

  /** Adds a resource (later changes to it still count) and returns a reference to it. */
  add(key: string, resource: FhirResource): Reference {
    const id = this.idFor(key);
    this.added.push({ id, resource });
    return { reference: `urn:uuid:${id}` };
  }

  replace(reference: Reference, resource: FhirResource): void {
    const entry = this.added.find((added) => `urn:uuid:${added.id}` === reference.reference)!;
    entry.resource = resource;
  }

  /** The entries, each resource with its id and the synthetic tag up front. */
  entries(): BundleEntry[] {
    return this.added.map(({ id, resource: { resourceType, ...elements } }) => ({
      fullUrl: `urn:uuid:${id}`,
      resource: { resourceType, id, meta: META, ...elements } as FhirResource,
    }));
  }
}
