import cors from 'cors';

/**
 * CORS for what browser apps call directly (SMART discovery, the token endpoint, FHIR reads): any
 * origin, since these calls carry a bearer token or client credentials, never cookies.
 */
export const openCors = cors({
  origin: '*',
  methods: ['GET', 'POST', 'OPTIONS'],
  exposedHeaders: ['ETag', 'Last-Modified', 'Location', 'WWW-Authenticate', 'X-Request-Id'],
  maxAge: 600,
});
