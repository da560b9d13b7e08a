import type { FhirResource } from 'fhir/r4';
import { z } from 'zod';

/** Any resource of the synthetic world, as FHIR R4 JSON; the schema names the fields every one has. */
export const fhirResourceSchema = z
  .looseObject({
    resourceType: z.string().meta({ example: 'Observation' }),
    id: z.string().meta({ example: 'syn-obs-0001-001' }),
    meta: z
      .looseObject({ tag: z.array(z.looseObject({ system: z.string(), code: z.string() })) })
      .meta({ description: 'Carries the `synthetic` tag' }),
  })
  .meta({ id: 'FhirResource', description: 'A synthetic FHIR R4 resource (https://hl7.org/fhir/R4/), stable across runs' });

export type FhirResourceJson = z.input<typeof fhirResourceSchema>;

/** The store's resources are FHIR R4 JSON already; the cast only tells a route which schema documents them. */
export function asFhirJson<T extends FhirResource>(resource: T): FhirResourceJson {
  return resource as unknown as FhirResourceJson;
}
