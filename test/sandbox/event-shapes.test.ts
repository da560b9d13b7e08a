import type { Bundle, FhirResource } from 'fhir/r4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_EXHAUSTED_EVENT, eventCatalog, findEvent } from '../../catalog/events';
import { outcomesOf, scenarios } from '../../catalog/scenarios';
import type { ScenarioOutcome } from '../../catalog/scenarios/definition';
import { loadFhirStore } from '../../fixtures/store';
import { HL7_TRIGGERS } from '../../hl7/triggers';
import { AGGREGATOR_COMPLETED_EVENT } from '../../interop/aggregator/completed-event';
import { buildStepResources } from '../../scenarios/content';
import { resourceStamp } from '../../scenarios/ids';
import { planRun } from '../../scenarios/plan';
import { tenantReceivingAt, trigger } from '../support/deliveries';
import { fhirErrors } from '../support/fhir-validator';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * One payload shape per event name (CONVENTIONS.md, Webhooks): whoever sends an event (a scenario
 * run, the mock trigger, HL7 inject, the aggregator, the delivery engine) sends what the catalog's
 * example for that event is: the same resource type and, for a Bundle, the same Bundle type and the
 * same entry resource types. A receiver that switches on the event name can rely on it.
 */

interface Shape {
  resourceType: string;
  bundleType?: string;
  entryTypes?: string[];
}

function shapeOf(resource: FhirResource): Shape {
  if (resource.resourceType !== 'Bundle') return { resourceType: resource.resourceType };
  const bundle = resource as Bundle;
  return {
    resourceType: 'Bundle',
    bundleType: bundle.type,
    entryTypes: [...new Set((bundle.entry ?? []).map((entry) => entry.resource!.resourceType))].sort(),
  };
}

const store = loadFhirStore();
const catalogShape = (event: string) => shapeOf(findEvent(event)!.sampleResource(store));

/** Every event each emitter sent, with what it carried. */
const sent = new Map<string, Set<string>>();
function expectCatalogShape(emitter: string, event: string, resource: FhirResource): void {
  expect(findEvent(event), `${emitter} sends ${event}, which the catalog must name`).toBeDefined();
  expect(shapeOf(resource), `${emitter} sends ${event}`).toEqual(catalogShape(event));
  expect(fhirErrors(resource), `${emitter} sends ${event}: valid R4`).toEqual([]);
  sent.set(event, new Set([...(sent.get(event) ?? []), emitter]));
}

describe('every emitter sends the shape of its event’s catalog example', () => {
  it('catalog examples: a Bundle example is a collection or a message, and holds entries', () => {
    for (const [name, event] of eventCatalog) {
      const shape = shapeOf(event.sampleResource(store));
      if (shape.resourceType === 'Bundle') {
        expect(['collection', 'message'], name).toContain(shape.bundleType);
        expect(shape.entryTypes!.length, name).toBeGreaterThan(0);
      }
    }
  });

  // Validating every scenario resource against the R4 schema takes a while on a loaded machine.
  it('scenario runs: every step of every scenario, in every outcome', { timeout: 120_000 }, () => {
    const runId = 'run_01jd8x3m0ae8v9q2w1f4k7t5zr';
    for (const scenario of scenarios) {
      const outcomes: (ScenarioOutcome | undefined)[] = outcomesOf(scenario.id).length > 0 ? [...outcomesOf(scenario.id)] : [undefined];
      for (const outcome of outcomes) {
        const result = planRun({ scenario, patientId: 'syn-pat-0001', outcome, store });
        if (!('plan' in result)) throw new Error(`${scenario.id} (${outcome}): ${JSON.stringify(result)}`);
        const content = {
          store,
          plan: result.plan,
          stamp: resourceStamp({ runId, scenarioId: scenario.id, patientId: 'syn-pat-0001', seed: null }),
          simulatedStart: new Date('2026-03-02T09:00:00Z'),
        };
        for (const step of result.plan.steps.filter((candidate) => !candidate.skipped)) {
          for (const { event, resource } of buildStepResources(content, step)) {
            expectCatalogShape(`scenario ${scenario.id} (${outcome ?? 'no outcome'}) step ${step.id}`, event, resource);
          }
        }
      }
    }
    for (const name of ['eligibility.check.completed', 'claims.claim.adjudicated', 'credentialing.practitioner.verified']) {
      expect(sent.get(name)?.size, `scenarios send ${name}`).toBeGreaterThan(0);
    }
  });
});

describe('emitters behind the API', () => {
  let service: TestService;
  let receiver: TestReceiver;
  let gone: TestReceiver;
  beforeAll(async () => {
    [service, receiver, gone] = await Promise.all([
      startTestService({ WEBHOOK_RETRY_SCHEDULE: '200ms' }),
      startReceiver(),
      // 410 Gone fails a delivery at once, which the engine reports as webhook.delivery.exhausted.
      startReceiver(() => ({ status: 410, body: 'gone' })),
    ]);
  });
  afterAll(() => Promise.all([service?.stop(), receiver?.close(), gone?.close()]));

  it('the mock trigger, for every catalog event', { timeout: 120_000 }, async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    // Every request first, then the checks: validation is slow enough for an idle pooled socket to be closed under the next request.
    const envelopes: { event: string; resource: FhirResource }[] = [];
    for (const name of eventCatalog.keys())
      envelopes.push((await trigger(service, tenant.key, { event: name })).envelope as (typeof envelopes)[number]);
    for (const envelope of envelopes) expectCatalogShape('mock trigger', envelope.event, envelope.resource);
  });

  // Each templated trigger has its own hl7.* event, whose catalog example is that template's message
  // Bundle. (hl7.message.received, any other trigger, is a message Bundle whose entries follow the
  // message's segments, so its entry types vary by message; test/hl7/corpus.test.ts checks those.)
  it('HL7 inject, for every template', { timeout: 120_000 }, async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const templates = await service.call('/v1/sandbox/hl7/templates', { key: tenant.key });
    expect(templates.status).toBe(200);
    const sent: { template: string; envelope: { event: string; resource: FhirResource } }[] = [];
    for (const template of templates.body.data as { id: string; er7: string }[]) {
      const injected = await service.call('/v1/sandbox/hl7/inject', { key: tenant.key, method: 'POST', body: { message: template.er7 } });
      expect(injected.status, `${template.id}: ${JSON.stringify(injected.body)}`).toBe(202);
      sent.push({ template: template.id, envelope: injected.body.delivery.envelope });
    }
    for (const { template, envelope } of sent) expectCatalogShape(`HL7 inject ${template}`, envelope.event, envelope.resource);
  });

  it('the aggregator’s completion event', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const posted = await service.call('/v1/sandbox/aggregator/query', {
      key: tenant.key,
      method: 'POST',
      body: { patient_id: 'syn-pat-0001', purpose_of_use: 'treatment', simulate: { lab: 'error' } },
    });
    expect([200, 202]).toContain(posted.status);
    const delivery = await waitUntil(
      async () => {
        const page = await service.call(`/v1/webhooks/deliveries?event=${AGGREGATOR_COMPLETED_EVENT}`, { key: tenant.key });
        return (page.body.data as { envelope: { event: string; resource: FhirResource } }[])[0];
      },
      { what: 'the aggregator completion delivery', timeoutMs: 30_000 },
    );
    expectCatalogShape('aggregator', delivery.envelope.event, delivery.envelope.resource);
  });

  it('the delivery engine’s exhausted report', async () => {
    const tenant = await tenantReceivingAt(service, gone.url);
    await trigger(service, tenant.key, { event: 'adt.patient.admitted' });
    const report = await waitUntil(
      async () => {
        const page = await service.call(`/v1/webhooks/deliveries?event=${DELIVERY_EXHAUSTED_EVENT}`, { key: tenant.key });
        return (page.body.data as { envelope: { event: string; resource: FhirResource } }[])[0];
      },
      { what: 'the exhausted report', timeoutMs: 30_000 },
    );
    expectCatalogShape('delivery engine', report.envelope.event, report.envelope.resource);
  });

  it('covers every catalog event that an emitter sends', () => {
    // Every catalog event is sent by the mock trigger at least; the ones sent by another emitter too
    // were compared for that emitter above.
    for (const name of eventCatalog.keys()) expect(sent.has(name), name).toBe(true);
    for (const name of new Set(HL7_TRIGGERS.map((trigger) => trigger.event))) {
      expect(
        [...(sent.get(name) ?? [])].some((emitter) => emitter.startsWith('HL7 inject')),
        `${name}: sent by HL7 inject`,
      ).toBe(true);
    }
    for (const name of [
      'eligibility.check.completed',
      'claims.claim.adjudicated',
      'credentialing.practitioner.verified',
      AGGREGATOR_COMPLETED_EVENT,
    ]) {
      expect([...sent.get(name)!].length, `${name}: ${[...sent.get(name)!].join(', ')}`).toBeGreaterThan(1);
    }
  });
});
