import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialingFileSchema } from '../../api/interop/credentialing';
import { type CredentialingFile, credentialingFiles } from '../../interop/credentialing/file';
import { pageThrough } from '../support/paging';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let key: string;
let files: CredentialingFile[];
beforeAll(async () => {
  service = await startTestService();
  ({ key } = await service.newTenant());
  files = (await pageThrough(service, key, '/v1/sandbox/credentialing/practitioners?limit=4')).items as unknown as CredentialingFile[];
});
afterAll(() => service.stop());

const file = (id: string) => files.find((candidate) => candidate.practitioner_id === id)!;

describe('GET /v1/sandbox/credentialing/practitioners', () => {
  it("lists every practitioner's file, and reads each one alone", async () => {
    expect(files.map((candidate) => candidate.practitioner_id)).toEqual(
      service.fhirStore.list('Practitioner').map((practitioner) => practitioner.id),
    );
    // Exactly the files as built, whose content credentialing.unit.test.ts checks.
    expect(files).toEqual(JSON.parse(JSON.stringify(credentialingFiles(service.fhirStore))));
    const one = await service.call('/v1/sandbox/credentialing/practitioners/syn-prac-001', { key });
    expect(one.status).toBe(200);
    // Every file is what the OpenAPI document (its zod schema) says.
    for (const candidate of files) expect(credentialingFileSchema.safeParse(candidate).error, candidate.practitioner_id).toBeUndefined();
    expect(one.body).toEqual(file('syn-prac-001'));
    const flagged = await service.call('/v1/sandbox/credentialing/practitioners?status=flagged', { key });
    expect(flagged.body.data.map((candidate: CredentialingFile) => candidate.practitioner_id)).toEqual(['syn-prac-009', 'syn-prac-012']);
  });

  it('answers an unknown practitioner with a 404 problem, and a bad filter with a 422', async () => {
    const unknown = await service.call('/v1/sandbox/credentialing/practitioners/syn-prac-999', { key });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'not_found', detail: expect.stringContaining('syn-prac-999') });
    const bad = await service.call('/v1/sandbox/credentialing/practitioners?status=lapsed&limit=0', { key });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['query.limit', 'query.status']);
  });
});
