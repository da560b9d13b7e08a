import { describe, expect, it } from 'vitest';
import { readBearer } from '../../api/http/bearer';

describe('reading Authorization: Bearer', () => {
  it('reads one token, whatever the case of the scheme and the spaces around it', () => {
    expect(readBearer('Bearer sk_sandbox_abc')).toEqual({ kind: 'token', token: 'sk_sandbox_abc' });
    expect(readBearer('bearer   eyJ.a.b  ')).toEqual({ kind: 'token', token: 'eyJ.a.b' });
  });

  it('tells a missing header from a malformed one', () => {
    expect(readBearer(undefined)).toEqual({ kind: 'missing' });
    expect(readBearer('')).toEqual({ kind: 'missing' });
    for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer two tokens', 'sk_sandbox_abc'])
      expect(readBearer(header), header).toEqual({ kind: 'malformed' });
  });
});
