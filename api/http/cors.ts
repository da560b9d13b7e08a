import cors from 'cors';
import type { RequestHandler } from 'express';

/** What the API's CORS answers allow (see openCors). */
export const OPEN_CORS_OPTIONS = {
  origin: '*',
  methods: ['GET', 'POST', 'OPTIONS'],
  exposedHeaders: ['ETag', 'Last-Modified', 'Location', 'WWW-Authenticate', 'X-Request-Id'],
  maxAge: 600,
};
const preflight = cors(OPEN_CORS_OPTIONS);
const EXPOSED_HEADERS = OPEN_CORS_OPTIONS.exposedHeaders.join(',');

/**
 * CORS for what browser apps call directly (SMART discovery, the token endpoint, FHIR reads): any
 * origin, since these calls carry a bearer token or client credentials, never cookies. Preflights
 * are the `cors` package's; for every other request it would copy its options and make its callbacks
 * anew to set the same two headers, which are set here as it sets them (test/http/cors.unit.test.ts).
 */
export const openCors: RequestHandler = (req, res, next) => {
  if (req.method === 'OPTIONS') return preflight(req, res, next);
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
  next();
};
