import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scenarios } from '../../catalog/scenarios';
import { scenarioProgressQuery, scenarioWorkflowId } from '../../workflows/scenario/contract';
import { tenantReceivingAt } from '../support/deliveries';
import { fhirErrors } from '../support/fhir-validator';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';
import { emittedOf, FAST, hasEnded, PENDED_THEN_APPROVED_EVENTS, runScenario, startRun, verifiedEnvelopes, waitForRun } from './support';

let service: TestService;
let receiver: TestReceiver;
beforeAll(async () => {
  service = await startTestService({ WEBHOOK_RETRY_SCHEDULE: '200ms,400ms' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await service.stop();
});

/** A tenant with its own receiver, so each test counts only its own deliveries. */
async function tenantWithReceiver() {
  const own = await startReceiver();
  const tenant = await tenantReceivingAt(service, own.url);
  return { ...tenant, receiver: own };
}

const codeOfReview = (response: any) => response.item[0].adjudication[0].extension[0].extension[0].valueCodeableConcept.coding[0].code;

describe('running the prior-authorization scenario', () => {
  it('answers 202 with the run, then emits submitted → pended (queued, A4) → approved (complete, A1, preAuthRef) in step order, signed and valid R4', async () => {
    const tenant = await tenantWithReceiver();
    try {
      const accepted = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', { pace: FAST, outcome: 'pended_then_approved' });
      expect(accepted.status).toBe(202);
      expect(accepted.headers.get('location')).toBe(`/v1/sandbox/scenarios/runs/${accepted.body.id}`);
      expect(accepted.body).toMatchObject({
        id: expect.stringMatching(/^run_[0-9a-z]{26}$/),
        scenario_id: 'prior_auth_approved_after_pend',
        status: 'running',
        pace: FAST,
        patient: 'syn-pat-0001',
        connection_id: null,
        outcome: 'pended_then_approved',
        decided_by: { payer_id: 'syn-payer-silverharbor', rule: 'prior_authorization.services[code=73721]', decision_within_hours: 168 },
        workflow_id: scenarioWorkflowId(accepted.body.id),
        simulated_now: expect.any(String),
      });
      expect(accepted.body.steps.map((step: any) => [step.id, step.status])).toEqual([
        ['order_placed', 'pending'],
        ['eligibility_checked', 'pending'],
        ['request_submitted', 'pending'],
        ['request_pended', 'pending'],
        ['documentation_sent', 'pending'],
        ['request_approved', 'pending'],
        ['scan_booked', 'pending'],
      ]);

      const run = await waitForRun(service, tenant.key, accepted.body.id, hasEnded);
      expect(run.status).toBe('completed');
      expect(run.steps.every((step: any) => step.status === 'done')).toBe(true);
      // P3DT9H10M of simulated time from the first step to the last.
      expect(Date.parse(run.steps.at(-1).simulated_due_at) - Date.parse(run.steps[0].simulated_due_at)).toBe(((3 * 24 + 9) * 60 + 10) * 60_000);
      expect(run.simulated_now).toBe(run.steps.at(-1).simulated_due_at);

      const emitted = emittedOf(run);
      const envelopes = verifiedEnvelopes(await tenant.receiver.waitForRequests(emitted.length), tenant.secret);
      expect(envelopes.map((envelope) => envelope.event)).toEqual(PENDED_THEN_APPROVED_EVENTS);
      expect(envelopes.map((envelope) => envelope.delivery_id)).toEqual(emitted.map((entry) => entry.delivery_id));
      for (const envelope of envelopes) expect(fhirErrors(envelope.resource), envelope.event).toEqual([]);

      const [, , submitted, pended, approved] = envelopes.map((envelope) => envelope.resource);
      expect(submitted).toMatchObject({ resourceType: 'Claim', use: 'preauthorization', patient: { reference: 'Patient/syn-pat-0001' } });
      expect(pended).toMatchObject({ resourceType: 'ClaimResponse', outcome: 'complete', request: { reference: `Claim/${submitted.id}` } });
      expect(codeOfReview(pended)).toBe('A4');
      expect(approved).toMatchObject({ resourceType: 'ClaimResponse', outcome: 'complete', preAuthRef: expect.any(String) });
      expect(codeOfReview(approved)).toBe('A1');

      // Each delivery is an ordinary one, linked to its run and step.
      for (const entry of emitted) {
        const delivery = await service.call(`/v1/webhooks/deliveries/${entry.delivery_id}`, { key: tenant.key });
        expect(delivery.body).toMatchObject({
          status: 'succeeded',
          run_id: run.id,
          step_id: entry.step,
          scenario_id: run.scenario_id,
          event: entry.event,
        });
      }
    } finally {
      await tenant.receiver.close();
    }
  });

  it.each([
    ['denied', 'prior_auth.request.denied', 'A3', 4],
    ['modified', 'prior_auth.request.approved', 'A6', 5],
  ])('outcome %s: the decision is %s with review action %s', async (outcome, event, code, count) => {
    const tenant = await tenantWithReceiver();
    try {
      const accepted = await startRun(service, tenant.key, 'prior_auth_approved_after_pend', { pace: FAST, outcome });
      const run = await waitForRun(service, tenant.key, accepted.id, hasEnded);
      expect(run.status).toBe('completed');
      const envelopes = verifiedEnvelopes(await tenant.receiver.waitForRequests(count), tenant.secret);
      expect(envelopes).toHaveLength(count);
      const decision = envelopes.find((envelope) => envelope.event === event)!;
      expect(codeOfReview(decision.resource)).toBe(code);
      expect(run.steps.find((step: any) => step.id === 'request_pended').status).toBe('skipped');
      if (outcome === 'denied') expect(decision.resource.preAuthRef).toBeUndefined();
      else expect(decision.resource.preAuthRef).toEqual(expect.any(String));
    } finally {
      await tenant.receiver.close();
    }
  });
});

describe('every catalog scenario', () => {
  it('runs end to end at accelerated pace: events arrive signed, in step order, valid R4, each linked to its run and step', async () => {
    const results = await Promise.all(
      scenarios.map(async (scenario) => {
        const tenant = await tenantWithReceiver();
        try {
          const accepted = await startRun(service, tenant.key, scenario.id, { pace: FAST });
          const run = await waitForRun(service, tenant.key, accepted.id, hasEnded, 30_000);
          const emitted = emittedOf(run);
          const envelopes = verifiedEnvelopes(await tenant.receiver.waitForRequests(emitted.length), tenant.secret);
          return { scenario, run, emitted, envelopes, extra: tenant.receiver.requests.length - emitted.length };
        } finally {
          await tenant.receiver.close();
        }
      }),
    );
    for (const { scenario, run, emitted, envelopes, extra } of results) {
      expect(run.status, scenario.id).toBe('completed');
      const planned = run.steps.filter((step: any) => step.status !== 'skipped').flatMap((step: any) => step.events);
      expect(
        emitted.map((entry) => entry.event),
        scenario.id,
      ).toEqual(planned);
      expect(
        envelopes.map((envelope) => envelope.delivery_id),
        scenario.id,
      ).toEqual(emitted.map((entry) => entry.delivery_id));
      expect(extra, scenario.id).toBe(0);
      for (const envelope of envelopes) {
        expect(fhirErrors(envelope.resource), `${scenario.id} ${envelope.event}`).toEqual([]);
        expect(envelope.resource.meta.tag).toContainEqual(expect.objectContaining({ code: 'synthetic' }));
      }
    }
  });
});

describe('pace and steering', () => {
  it('manual pace: nothing after step k until advanced; cancel mid-wait stops the run and its events; cancel after the end is 409', async () => {
    const tenant = await tenantWithReceiver();
    try {
      const accepted = await startRun(service, tenant.key, 'lab_order_to_result', { pace: { mode: 'manual' } });
      expect(accepted.pace).toEqual({ mode: 'manual', time_scale: null });
      const waiting = await waitForRun(service, tenant.key, accepted.id, (run) => run.steps[1].status === 'waiting');
      expect(waiting.steps[0].status).toBe('done');
      expect(waiting.steps[1].due_at).toBeNull();
      expect(tenant.receiver.requests).toHaveLength(1);

      const advanced = await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/advance`, { key: tenant.key, method: 'POST' });
      expect(advanced.status).toBe(200);
      const done = await waitForRun(service, tenant.key, accepted.id, hasEnded);
      expect(done.status).toBe('completed');
      expect((await tenant.receiver.waitForRequests(3)).map((request) => JSON.parse(request.body).event)).toEqual([
        'orders.service_request.placed',
        'results.observation.final',
        'results.report.final',
      ]);

      const late = await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({ code: 'scenario_run_ended', detail: expect.stringContaining('completed') });
      expect((await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/advance`, { key: tenant.key, method: 'POST' })).status).toBe(409);
    } finally {
      await tenant.receiver.close();
    }
  });

  it('cancel mid-wait: the run is cancelled, its remaining steps too, and no further event arrives', async () => {
    const tenant = await tenantWithReceiver();
    try {
      // Realtime: the second step waits ten real minutes, so the cancel lands mid-wait.
      const accepted = await startRun(service, tenant.key, 'prior_auth_approved_after_pend', { pace: { mode: 'realtime' } });
      const waiting = await waitForRun(service, tenant.key, accepted.id, (run) => run.steps[1].status === 'waiting');
      expect(Date.parse(waiting.steps[1].due_at) - Date.now()).toBeGreaterThan(9 * 60_000);
      const cancelled = await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe('cancelled');
      expect(cancelled.body.steps.map((step: any) => step.status)).toEqual([
        'done',
        'cancelled',
        'cancelled',
        'cancelled',
        'cancelled',
        'cancelled',
        'cancelled',
      ]);
      const stored = await waitForRun(service, tenant.key, accepted.id, (run) => run.status === 'cancelled');
      expect(stored.stopped_reason).toEqual(expect.any(String));
      // The workflow has closed: nothing can emit after this.
      const handle = service.temporal.workflow.getHandle(scenarioWorkflowId(accepted.id));
      await handle.result();
      expect(tenant.receiver.requests).toHaveLength(1);
      expect((await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' })).status).toBe(409);
    } finally {
      await tenant.receiver.close();
    }
  });

  it('advance cuts a realtime wait short', async () => {
    const tenant = await tenantWithReceiver();
    try {
      const accepted = await startRun(service, tenant.key, 'appointment_rescheduled', { pace: { mode: 'realtime' } });
      await waitForRun(service, tenant.key, accepted.id, (run) => run.steps[1].status === 'waiting');
      await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/advance`, { key: tenant.key, method: 'POST' });
      await waitForRun(service, tenant.key, accepted.id, (run) => run.steps[2].status === 'waiting');
      await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/advance`, { key: tenant.key, method: 'POST' });
      const run = await waitForRun(service, tenant.key, accepted.id, hasEnded);
      expect(run.status).toBe('completed');
      expect((await tenant.receiver.waitForRequests(3)).map((request) => JSON.parse(request.body).event)).toEqual([
        'scheduling.appointment.booked',
        'scheduling.appointment.cancelled',
        'scheduling.appointment.booked',
      ]);
    } finally {
      await tenant.receiver.close();
    }
  });
});

describe('reading runs', () => {
  it('lists runs newest first with scenario and status filters and paging; another organization sees none of them', async () => {
    const tenant = await service.newTenant();
    const other = await service.newTenant();
    const first = await startRun(service, tenant.key, 'lab_order_to_result', { pace: { mode: 'manual' } });
    const second = await startRun(service, tenant.key, 'appointment_rescheduled', { pace: { mode: 'manual' } });
    const third = await startRun(service, tenant.key, 'lab_order_to_result', { pace: { mode: 'manual' } });
    const ids = (response: any) => response.body.data.map((run: any) => run.id);

    expect(ids(await service.call('/v1/sandbox/scenarios/runs', { key: tenant.key }))).toEqual([third.id, second.id, first.id]);
    expect(ids(await service.call('/v1/sandbox/scenarios/runs?scenario_id=lab_order_to_result', { key: tenant.key }))).toEqual([third.id, first.id]);
    expect(ids(await service.call('/v1/sandbox/scenarios/runs?status=completed', { key: tenant.key }))).toEqual([]);
    const page = await service.call('/v1/sandbox/scenarios/runs?limit=2', { key: tenant.key });
    expect(ids(page)).toEqual([third.id, second.id]);
    expect(ids(await service.call(`/v1/sandbox/scenarios/runs?limit=2&cursor=${page.body.next_cursor}`, { key: tenant.key }))).toEqual([first.id]);
    expect((await service.call('/v1/sandbox/scenarios/runs?status=paused', { key: tenant.key })).status).toBe(422);

    expect((await service.call('/v1/sandbox/scenarios/runs', { key: other.key })).body.data).toEqual([]);
    expect((await service.call(`/v1/sandbox/scenarios/runs/${first.id}`, { key: other.key })).status).toBe(404);
    expect((await service.call(`/v1/sandbox/scenarios/runs/${first.id}/cancel`, { key: other.key, method: 'POST' })).status).toBe(404);
    expect((await service.call('/v1/sandbox/scenarios/runs/not-a-run', { key: tenant.key })).status).toBe(404);
    for (const run of [first, second, third]) {
      expect((await service.call(`/v1/sandbox/scenarios/runs/${run.id}/cancel`, { key: tenant.key, method: 'POST' })).status).toBe(200);
    }
  });

  it('an Idempotency-Key retry answers the same run and starts nothing new', async () => {
    const tenant = await service.newTenant();
    const headers = { 'idempotency-key': randomUUID() };
    const body = { pace: { mode: 'manual' } };
    const first = await runScenario(service, tenant.key, 'lab_order_to_result', body, headers);
    const retry = await runScenario(service, tenant.key, 'lab_order_to_result', body, headers);
    expect(first.status).toBe(202);
    expect(retry.status).toBe(202);
    expect(retry.body.id).toBe(first.body.id);
    expect((await service.call('/v1/sandbox/scenarios/runs', { key: tenant.key })).body.data).toHaveLength(1);
    await service.call(`/v1/sandbox/scenarios/runs/${first.body.id}/cancel`, { key: tenant.key, method: 'POST' });
  });

  it('finds a run in the Web UI by ScenarioId and OrgId, with a summary naming the scenario, patient and pace', async () => {
    const tenant = await service.newTenant();
    const accepted = await startRun(service, tenant.key, 'lab_order_to_result', { pace: { mode: 'manual' } });
    // The run's deliveries carry the same attributes; the workflow type picks the run itself.
    const query = `OrgId = '${tenant.organizationId}' AND ScenarioId = 'lab_order_to_result' AND WorkflowType = 'scenarioWorkflow'`;
    // Visibility is eventually consistent: wait for the run to be listed.
    const found = await waitUntil(
      async () => {
        const ids: string[] = [];
        for await (const run of service.temporal.workflow.list({ query })) ids.push(run.workflowId);
        return ids.length > 0 ? ids : undefined;
      },
      { what: 'the run appearing in Temporal visibility', timeoutMs: 15_000, intervalMs: 200 },
    );
    expect(found).toEqual([scenarioWorkflowId(accepted.id)]);
    const description = await service.temporal.workflow.getHandle(scenarioWorkflowId(accepted.id)).describe();
    expect(await description.staticSummary()).toBe('Lab order to result: syn-pat-0001 (manual)');
    const progress = await service.temporal.workflow.getHandle(scenarioWorkflowId(accepted.id)).query(scenarioProgressQuery);
    expect(progress.status).toBe('running');
    await service.call(`/v1/sandbox/scenarios/runs/${accepted.id}/cancel`, { key: tenant.key, method: 'POST' });
  });

  it('the catalog says where to run each scenario and which outcomes it takes', async () => {
    const tenant = await service.newTenant();
    const { body } = await service.call('/v1/sandbox/catalog', { key: tenant.key });
    const byId = new Map(body.scenarios.map((scenario: any) => [scenario.id, scenario]));
    expect(byId.get('prior_auth_denied')).toMatchObject({
      outcomes: ['approved', 'denied', 'modified'],
      run: '/v1/sandbox/scenarios/prior_auth_denied/run',
    });
    expect(byId.get('outpatient_visit_to_payment')).toMatchObject({ outcomes: ['paid', 'denied', 'partially_paid'] });
    expect(byId.get('lab_order_to_result')).toMatchObject({ outcomes: [] });
  });

  it('is in the OpenAPI document', async () => {
    const { body } = await service.call('/openapi.json');
    for (const path of [
      '/v1/sandbox/scenarios/{scenario_id}/run',
      '/v1/sandbox/scenarios/runs',
      '/v1/sandbox/scenarios/runs/{run_id}',
      '/v1/sandbox/scenarios/runs/{run_id}/advance',
      '/v1/sandbox/scenarios/runs/{run_id}/cancel',
    ])
      expect(body.paths[path], path).toBeDefined();
  });
});

describe('bad input', () => {
  it('unknown scenario is 404; bad pace, time_scale, outcome and seed are one 422 listing each field', async () => {
    const tenant = await service.newTenant();
    const unknown = await runScenario(service, tenant.key, 'no_such_scenario');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toContain('GET /v1/sandbox/catalog');

    const bad = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', {
      pace: { mode: 'accelerated', time_scale: 0 },
      outcome: 'maybe',
      seed: 'not a seed!',
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((error: any) => error.path).sort()).toEqual(['body.outcome', 'body.pace.time_scale', 'body.seed']);
    const badMode = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', { pace: { mode: 'warp' } });
    expect(badMode.body.errors.map((error: any) => error.path)).toEqual(['body.pace.mode']);
    const scaleWithoutAcceleration = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', {
      pace: { mode: 'manual', time_scale: 60 },
    });
    expect(scaleWithoutAcceleration.body.errors).toEqual([
      { path: 'body.pace.time_scale', message: 'time_scale applies only to the accelerated pace' },
    ]);

    const wrongOutcome = await runScenario(service, tenant.key, 'prior_auth_denied', { outcome: 'pended_then_approved' });
    expect(wrongOutcome.status).toBe(422);
    expect(wrongOutcome.body.errors).toEqual([{ path: 'body.outcome', message: expect.stringContaining('approved, denied or modified') }]);
    expect((await service.call('/v1/sandbox/scenarios/runs', { key: tenant.key })).body.data).toEqual([]);
  });

  it("an unknown or another organization's connection is 404, an unknown patient or one who does not fit is 422 saying why", async () => {
    const tenant = await service.newTenant();
    const other = await service.newTenant();
    const theirs = await service.call('/v1/connections', { key: other.key, method: 'POST', body: { name: 'Theirs' } });
    const foreign = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', { connection_id: theirs.body.id });
    expect(foreign.status).toBe(404);
    expect(foreign.body.errors).toEqual([{ path: 'body.connection_id', message: expect.any(String) }]);
    expect((await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', { connection_id: 'conn_nope' })).status).toBe(404);

    const nobody = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', { patient: 'syn-pat-9999' });
    expect(nobody.status).toBe(422);
    expect(nobody.body.errors).toEqual([{ path: 'body.patient', message: expect.stringContaining('syn-pat-9999') }]);

    const tidewater = service.fhirStore
      .list('Coverage')
      .find((coverage: any) => coverage.payor[0].reference === 'Organization/syn-payer-tidewater') as any;
    const unfit = await runScenario(service, tenant.key, 'prior_auth_approved_after_pend', { patient: tidewater.beneficiary.reference });
    expect(unfit.status).toBe(422);
    expect(unfit.body.code).toBe('patient_does_not_fit_scenario');
    expect(unfit.body.errors[0]).toEqual({
      path: 'body.patient',
      message: expect.stringContaining('does not require prior authorization for 73721'),
    });
  });
});
