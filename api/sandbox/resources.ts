import { z } from 'zod';
import { asFhirJson, fhirResourceSchema } from '../../fhir/resource-json';
import { type FhirStore, patientOf } from '../../fixtures/store';
import { pageOfSorted, pageQuerySchema, pageSchema } from '../http/pagination';
import { ApiProblem, invalidFields } from '../http/problem';
import { defineRoute } from '../http/route';
import { patientIdFrom, resourceNotFound } from './world-lookups';

/** `GET /v1/sandbox/resources/{type}[/{id}]`: every fixture, by type, from the store's memory indexes. */
export function sandboxResourceRoutes({ fhirStore }: { fhirStore: FhirStore }) {
  const supported = new Set(fhirStore.supportedTypes);
  const perPatient = new Set(fhirStore.supportedTypes.filter((type) => fhirStore.list(type).some((resource) => patientOf(resource) !== undefined)));
  const typeList = fhirStore.supportedTypes.join(', ');

  const assertSupported = (type: string) => {
    if (supported.has(type)) return;
    const closest = fhirStore.supportedTypes.find((candidate) => candidate.toLowerCase() === type.toLowerCase());
    throw new ApiProblem(
      404,
      'unknown_resource_type',
      `The sandbox has no resource type ${type}.${closest ? ` Did you mean ${closest}?` : ''} Supported types: ${typeList}.`,
    );
  };

  const typeParam = z.string().meta({ description: `A FHIR resource type, case-sensitive: ${typeList}`, example: 'Observation' });
  const listQuery = pageQuerySchema
    .extend({
      patient: z.string().min(1).optional().meta({ description: 'Only this patient’s resources: `syn-pat-0001` or `Patient/syn-pat-0001`' }),
    })
    .strict();

  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/resources/{type}',
      operationId: 'listSandboxResources',
      summary: 'List synthetic FHIR resources of a type, by id, optionally for one patient',
      description: 'The same synthetic world for every organization, with stable ids. Unknown types answer 404 naming the supported ones.',
      tag: 'Synthetic FHIR',
      auth: 'api_key',
      params: z.object({ type: typeParam }),
      query: listQuery,
      success: { status: 200, description: 'A page of resources', schema: pageSchema(fhirResourceSchema) },
      errors: [400, 404, 422],
      handler: async ({ params, query }) => {
        assertSupported(params.type);
        let resources = fhirStore.list(params.type);
        if (query.patient !== undefined) {
          const patientId = patientIdFrom(query.patient);
          if (!perPatient.has(params.type)) {
            const message = `${params.type} resources are shared by all patients; drop the patient filter`;
            throw invalidFields('query', [{ path: 'query.patient', message }]);
          }
          if (!fhirStore.read('Patient', patientId)) throw resourceNotFound('Patient', patientId);
          resources = fhirStore.listForPatient(params.type, patientId);
        }
        const page = pageOfSorted(resources, query);
        return { data: page.data.map(asFhirJson), next_cursor: page.next_cursor };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/resources/{type}/{id}',
      operationId: 'getSandboxResource',
      summary: 'Read one synthetic FHIR resource',
      tag: 'Synthetic FHIR',
      auth: 'api_key',
      params: z.object({ type: typeParam, id: z.string().meta({ example: 'syn-obs-0001-001' }) }),
      success: { status: 200, description: 'The resource', schema: fhirResourceSchema },
      errors: [404],
      handler: async ({ params }) => {
        assertSupported(params.type);
        const resource = fhirStore.read(params.type, params.id);
        if (!resource) throw resourceNotFound(params.type, params.id);
        return asFhirJson(resource);
      },
    }),
  ];
}
