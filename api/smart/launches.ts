import { z } from 'zod';
import type { FhirStore } from '../../fixtures/store';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { idSchema } from '../../platform/ids';
import { findClient } from '../../smart/clients';
import type { SmartUrls } from '../../smart/endpoints';
import { createLaunch } from '../../smart/launches';
import { ApiProblem, invalidFields, notFound } from '../http/problem';
import { defineRoute } from '../http/route';

const launchRequestSchema = z
  .object({
    client_id: idSchema('cli').meta({ description: 'A client your organization registered (a `cli_` id)' }),
    patient: z.string().min(1, 'patient must not be empty').meta({ description: 'Id of a synthetic Patient', example: 'p-0001' }),
    encounter: z.string().min(1, 'encounter must not be empty').optional().meta({ description: "Id of one of that patient's Encounters" }),
  })
  .strict()
  .meta({ id: 'SmartLaunchRequest' });

const launchSchema = z
  .object({
    launch: z.string().meta({ description: 'Opaque launch handle: for this client, one authorization, until expires_at' }),
    iss: z.string().meta({ description: 'The FHIR base URL (the aud the app must send)' }),
    launch_url: z.string().nullable().meta({ description: "The client's launch_uri with iss and launch; null when it registered none" }),
    expires_at: z.iso.datetime(),
  })
  .meta({ id: 'SmartLaunch' });

/** EHR launch: the sandbox plays the EHR that opens the app with a patient (and encounter) in context. */
export function smartLaunchRoutes({ db, config, fhirStore, urls }: { db: Database; config: Config; fhirStore: FhirStore; urls: SmartUrls }) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/smart/launch',
      operationId: 'createSmartLaunch',
      summary: 'Start an EHR launch of a SMART client',
      description: `Open launch_url in a browser: the app then authorizes at ${urls.authorize} with the launch parameter and gets this patient (and encounter) as context, without a login.`,
      tag: 'SMART on FHIR',
      auth: 'api_key',
      body: launchRequestSchema,
      success: { status: 201, description: 'The launch', schema: launchSchema },
      errors: [404, 409, 415, 422],
      // The handle is kept only as its digest (smart_launches), so the idempotency store keeps no copy either.
      replayed: (launch) =>
        new ApiProblem(
          409,
          'launch_handle_shown_once',
          `This Idempotency-Key already started a launch (it expires at ${launch.expires_at}); its handle is shown once and not kept. Start a new launch with a new Idempotency-Key.`,
        ),
      handler: async ({ auth, body }) => {
        const client = await findClient(db, body.client_id);
        if (!client || client.organizationId !== auth.organizationId) throw notFound('SMART client', body.client_id, 'body.client_id');
        if (!fhirStore.read('Patient', body.patient)) {
          throw invalidContext('patient', `no synthetic patient ${body.patient} exists; list them with GET /v1/patients`);
        }
        if (
          body.encounter !== undefined &&
          !fhirStore.listForPatient('Encounter', body.patient).some((encounter) => encounter.id === body.encounter)
        ) {
          throw invalidContext('encounter', `patient ${body.patient} has no encounter ${body.encounter}`);
        }
        const { handle, expiresAt } = await createLaunch(db, {
          clientId: client.id,
          patientId: body.patient,
          encounterId: body.encounter ?? null,
          lifetimeSeconds: config.SMART_LAUNCH_SECONDS,
        });
        let launchUrl: string | null = null;
        if (client.launchUri) {
          const url = new URL(client.launchUri);
          url.searchParams.set('iss', urls.fhirBase);
          url.searchParams.set('launch', handle);
          launchUrl = url.toString();
        }
        return { launch: handle, iss: urls.fhirBase, launch_url: launchUrl, expires_at: expiresAt.toISOString() };
      },
    }),
  ];
}

/** A well-formed body naming a patient or encounter the synthetic world lacks: the same 422 as a schema failure. */
function invalidContext(field: 'patient' | 'encounter', message: string): ApiProblem {
  return invalidFields('body', [{ path: `body.${field}`, message }]);
}
