import { z } from 'zod';

/** The SMART 2.x token response (RFC 6749 §5.1 plus launch context); it also documents /oauth/token. */
export const tokenResponseSchema = z
  .object({
    access_token: z.string().meta({ description: 'A JWT (RS256, `typ: at+jwt`) for the FHIR R4 endpoint.' }),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().meta({ description: 'Seconds until the access token expires (SMART_ACCESS_TOKEN_SECONDS).' }),
    scope: z.string().meta({ description: 'The scopes granted, space-separated; may be narrower than asked.' }),
    patient: z.string().optional().meta({ description: 'The patient in context (launch/patient).' }),
    encounter: z.string().optional().meta({ description: 'The encounter in context (launch/encounter, EHR launch).' }),
    need_patient_banner: z.boolean().optional().meta({ description: 'App launches only: whether the app shows the patient banner.' }),
    id_token: z.string().optional().meta({ description: 'With `openid`: an OpenID Connect id token.' }),
    refresh_token: z.string().optional().meta({ description: 'With `offline_access` or `online_access`; each refresh replaces it.' }),
  })
  .meta({ id: 'SmartTokenResponse' });
export type TokenResponse = z.infer<typeof tokenResponseSchema>;
