import { z } from 'zod';

/**
 * RFC 6749 §5.2 error codes, plus RFC 6750's for protected resources, and §4.1.2.1's server_error
 * and temporarily_unavailable for failures that are not the client's.
 */
export const OAUTH_ERROR_CODES = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'unsupported_response_type',
  'invalid_scope',
  'access_denied',
  'server_error',
  'temporarily_unavailable',
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];

/** The body of every OAuth error answer (RFC 6749 §5.2); it also documents them in /openapi.json. */
export const oauthErrorSchema = z
  .object({ error: z.enum(OAUTH_ERROR_CODES), error_description: z.string() })
  .meta({ id: 'OAuthError', description: 'RFC 6749 error object, sent with Cache-Control: no-store.' });

/** An OAuth error answered as `{ error, error_description }` (RFC 6749), or redirected to the client. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = error === 'invalid_client' ? 401 : 400,
  ) {
    super(description);
  }

  body(): z.infer<typeof oauthErrorSchema> {
    return { error: this.error, error_description: this.description };
  }
}
