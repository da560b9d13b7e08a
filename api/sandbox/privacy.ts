import { z } from 'zod';
import type { Database } from '../../platform/database';
import { refusesRealIdentifiers, setRefuseRealIdentifiers } from '../../platform/organizations';
import { PRIVACY_MODES } from '../../privacy/guard';
import { defineRoute } from '../http/route';

const privacySettingsSchema = z
  .object({
    real_identifiers: z.enum(PRIVACY_MODES).meta({
      description:
        'What a real SSN, MBI, licence, card number or e-mail address makes of a request on every channel: `mask` (default) masks it and answers with a warning; `refuse` refuses the request (HL7 AE, 422)',
    }),
  })
  .strict()
  .meta({ id: 'PrivacySettings' });

/** The organization's privacy setting (docs/api/privacy.md). */
export function privacyRoutes({ db }: { db: Database }) {
  const present = async (organizationId: string) => ({
    real_identifiers: (await refusesRealIdentifiers(db, organizationId)) ? ('refuse' as const) : ('mask' as const),
  });
  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/privacy',
      operationId: 'getPrivacySettings',
      summary: 'Read what a real identifier makes of a request: masked with a warning, or refused',
      tag: 'Privacy',
      auth: 'api_key',
      success: { status: 200, description: 'The setting', schema: privacySettingsSchema },
      handler: async ({ auth }) => present(auth.organizationId),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/sandbox/privacy',
      operationId: 'setPrivacySettings',
      summary: 'Choose what a real identifier makes of a request on every channel',
      description:
        'The sandbox takes synthetic data only. `mask` (default): a real identifier is masked before anything is stored or sent, and the answer warns (HL7 ERR-4 = W, an OperationOutcome warning, `warnings`); `refuse`: the request is refused instead (HL7 AE, 422).',
      tag: 'Privacy',
      auth: 'api_key',
      body: privacySettingsSchema,
      success: { status: 200, description: 'The setting', schema: privacySettingsSchema },
      errors: [415, 422],
      handler: async ({ auth, body }) => {
        await setRefuseRealIdentifiers(db, auth.organizationId, body.real_identifiers === 'refuse');
        return present(auth.organizationId);
      },
    }),
  ];
}
