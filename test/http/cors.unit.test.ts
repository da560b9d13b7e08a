import cors from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { OPEN_CORS_OPTIONS, openCors } from '../../api/http/cors';

/** The headers a CORS middleware sets on a stand-in request, and whether it passed the request on. */
function headersOf(middleware: RequestHandler, method: string, requestHeaders: Record<string, string>) {
  const set: Record<string, string> = {};
  const res = {
    statusCode: 200,
    setHeader: (name: string, value: string) => {
      set[name.toLowerCase()] = String(value);
    },
    getHeader: (name: string) => set[name.toLowerCase()],
    end: () => {},
  } as unknown as Response;
  let passedOn = false;
  middleware({ method, headers: requestHeaders } as Request, res, (() => {
    passedOn = true;
  }) as NextFunction);
  return { set, passedOn, status: res.statusCode };
}

describe('openCors', () => {
  it('sets the headers the cors package sets, on simple requests and preflights alike', () => {
    const library = cors(OPEN_CORS_OPTIONS);
    const cases: [string, Record<string, string>][] = [
      ['GET', { origin: 'https://app.example' }],
      ['POST', {}],
      ['OPTIONS', { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' }],
    ];
    for (const [method, requestHeaders] of cases) {
      expect(headersOf(openCors, method, requestHeaders), method).toEqual(headersOf(library, method, requestHeaders));
    }
    expect(headersOf(openCors, 'GET', {}).set).toEqual({
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'ETag,Last-Modified,Location,WWW-Authenticate,X-Request-Id',
    });
  });
});
