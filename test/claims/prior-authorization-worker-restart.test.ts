import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemToken } from '../support/backend-services';
import { pasExamples } from '../support/fhir-validator';
import { runEntryPoint } from '../support/processes';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

describe('a pended PAS authorization whose worker is killed', () => {
  it('is decided by a replacement worker when its review time is up', { timeout: 180_000 }, async () => {
    // The authorization's worker is a process of its own, so it can be killed outright (SIGKILL: no draining).
    await service.stopWorker();
    const doomed = runEntryPoint('bin/start-worker.ts', [], {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: service.config.DATABASE_URL,
      TEMPORAL_ADDRESS: service.config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: service.taskQueue,
      ALLOW_PRIVATE_TARGETS: 'true',
    });
    try {
      await doomed.waitFor(/Worker polling/, 90_000);
      const { accessToken, apiKey } = await systemToken(service, 'system/Claim.c');
      // ×60,480: the payer's 7-day standard review takes 10 s.
      await service.call('/v1/sandbox/prior-auth/settings', {
        key: apiKey,
        method: 'PUT',
        body: { pace: { mode: 'accelerated', time_scale: 60_480 }, outcome: 'pended_then_approved' },
      });
      const bundle: any = structuredClone((await pasExamples()).find((resource) => resource.id === 'MedicalServicesAuthorizationBundleExample'));
      const pended = await service.call('/fhir/R4/Claim/$submit', {
        key: accessToken,
        method: 'POST',
        body: bundle,
        headers: { 'content-type': 'application/fhir+json' },
      });
      expect(pended.status).toBe(200);
      const id = pended.body.entry[0].resource.id.replace('-', '_');
      const status = () => service.call(`/v1/sandbox/prior-auth/authorizations/${id}`, { key: apiKey });
      expect((await status()).body.decision).toBe('pended');
      expect(await doomed.stop('SIGKILL')).toBeNull();

      await service.startWorker();
      const decided = await waitUntil(
        async () => {
          const { decision } = (await status()).body;
          return decision === 'pended' ? undefined : decision;
        },
        { what: 'the decision', timeoutMs: 120_000, intervalMs: 500 },
      );
      expect(decided).toBe('certified');
    } finally {
      await doomed.stop('SIGKILL');
    }
  });
});
