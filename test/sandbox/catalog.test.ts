import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { domains } from '../../catalog/domains';
import { DEFAULT_MOCK_EVENT, eventCatalog, findEvent } from '../../catalog/events';
import { CMS_0057_F_EXPEDITED_HOURS, CMS_0057_F_STANDARD_HOURS } from '../../claims/payer-rules';
import { PAYERS } from '../../claims/payers';
import { containedIdsIn, referencesIn } from '../support/fhir-references';
import { fhirErrors } from '../support/fhir-validator';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
let key: string;
beforeAll(async () => {
  service = await startTestService();
  ({ key } = await service.newTenant());
});
afterAll(() => service.stop());

const CLINICAL = ['adt', 'results', 'orders', 'scheduling', 'documents', 'medications', 'hl7'];
const ADMIN_REVENUE = ['eligibility', 'prior_auth', 'claims', 'remittance', 'credentialing'];

interface Envelope {
  id: string;
  event: string;
  connection_id: string | null;
  environment: string;
  occurred_at: string;
  resource: { resourceType: string; id: string };
}

describe('GET /v1/sandbox/catalog', () => {
  it('lists the clinical, admin/revenue and webhook reliability domains, every event and every scenario', async () => {
    const response = await service.call('/v1/sandbox/catalog', { key });
    expect(response.status).toBe(200);
    const { domains: listed, events, scenarios, payers } = response.body;
    const byCategory = (category: string) =>
      listed
        .filter((domain: { category: string }) => domain.category === category)
        .map((domain: { id: string }) => domain.id)
        .sort();
    expect(byCategory('clinical')).toEqual([...CLINICAL].sort());
    expect(byCategory('admin_revenue')).toEqual([...ADMIN_REVENUE].sort());
    expect(byCategory('platform')).toEqual(['webhook_reliability']);
    expect(events.map((event: { name: string }) => event.name).sort()).toEqual([...eventCatalog.keys()].sort());
    expect(payers.map((payer: { payer_id: string }) => payer.payer_id).sort()).toEqual(PAYERS.map((payer) => payer.id).sort());
    for (const domain of listed) {
      expect(domain.events.length, domain.id).toBeGreaterThan(0);
      // HL7 v2 messages come from partners' interface engines, not from scenarios.
      if (domain.id !== 'hl7') expect(domain.scenarios.length, domain.id).toBeGreaterThan(0);
    }
    for (const scenario of scenarios) {
      expect(scenario.steps.length, scenario.id).toBeGreaterThan(0);
      expect(scenario.typical_duration_seconds).toBe(
        scenario.steps.reduce((sum: number, step: { typical_delay_seconds: number }) => sum + step.typical_delay_seconds, 0),
      );
      expect(scenario.typical_duration).toMatch(/^P(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?$/);
      for (const name of scenario.steps.flatMap((step: { emits: string[] }) => step.emits))
        expect(findEvent(name), `${scenario.id} emits ${name}`).toBeDefined();
    }
    expect(scenarios.find((scenario: { id: string }) => scenario.id === 'prior_auth_approved_after_pend')).toMatchObject({
      domains: ['orders', 'eligibility', 'prior_auth', 'scheduling'],
      typical_duration: 'P3DT9H10M',
    });
  });

  it('gives every event an example envelope whose resource is valid FHIR R4 (and PAS where it claims it) and resolves in the synthetic world', async () => {
    const { events } = (await service.call('/v1/sandbox/catalog', { key })).body as {
      events: { name: string; domain: string; example_envelope: Envelope }[];
    };
    expect(events.map((event) => event.name)).toContain(DEFAULT_MOCK_EVENT);
    for (const { name, domain, example_envelope: envelope } of events) {
      expect(envelope, name).toMatchObject({ event: name, connection_id: null, environment: 'sandbox' });
      expect(envelope.id).toMatch(/^evt_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
      expect(new Date(envelope.occurred_at).toISOString()).toBe(envelope.occurred_at);
      expect(fhirErrors(envelope.resource), name).toEqual([]);
      expect(domains.find((candidate) => candidate.id === domain)?.resourceTypes, name).toContain(envelope.resource.resourceType);
      // A message Bundle (hl7.*) refers to its own entries by fullUrl; every other reference resolves in the world.
      const fullUrls = new Set(((envelope.resource as { entry?: { fullUrl?: string }[] }).entry ?? []).map((entry) => entry.fullUrl));
      for (const reference of referencesIn(envelope.resource)) {
        if (fullUrls.has(reference)) continue;
        if (reference.startsWith('#')) {
          // A contained resource, named inside its container (the resource itself or a Bundle entry's).
          expect(
            containedIdsIn(envelope.resource).map((id) => `#${id}`),
            `${name}: ${reference}`,
          ).toContain(reference);
          continue;
        }
        const [type, id] = reference.split('/');
        expect(service.fhirStore.read(type!, id!), `${name}: ${reference}`).toBeDefined();
      }
    }
  });
});

describe('GET /v1/sandbox/domains', () => {
  it('pages through the domains by id, and reads one with its events, envelopes and scenarios', async () => {
    const first = await service.call('/v1/sandbox/domains?limit=5', { key });
    expect(first.body.data).toHaveLength(5);
    const rest = await service.call(`/v1/sandbox/domains?cursor=${first.body.next_cursor}`, { key });
    const ids = [...first.body.data, ...rest.body.data].map((domain: { id: string }) => domain.id);
    expect(ids).toEqual([...CLINICAL, ...ADMIN_REVENUE, 'webhook_reliability'].sort());
    expect(rest.body.next_cursor).toBeNull();

    const priorAuth = await service.call('/v1/sandbox/domains/prior_auth', { key });
    expect(priorAuth.status).toBe(200);
    expect(priorAuth.body.events.map((event: { name: string }) => event.name)).toEqual([
      'prior_auth.request.submitted',
      'prior_auth.request.pended',
      'prior_auth.request.approved',
      'prior_auth.request.denied',
    ]);
    expect(priorAuth.body.events[1].example_envelope.resource.resourceType).toBe('ClaimResponse');
    expect(priorAuth.body.scenarios.map((scenario: { id: string }) => scenario.id)).toEqual(['prior_auth_approved_after_pend', 'prior_auth_denied']);
  });

  it('answers 404 with the valid ids for an unknown domain', async () => {
    const response = await service.call('/v1/sandbox/domains/dentistry', { key });
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('not_found');
    expect(response.body.detail).toContain('prior_auth');
    expect((await service.call('/v1/sandbox/domains')).status).toBe(401);
  });
});

describe('GET /v1/sandbox/payer-rules/{payer_id}', () => {
  it('answers each synthetic payer’s rules as data within the CMS-0057-F bounds', async () => {
    for (const payer of PAYERS) {
      const response = await service.call(`/v1/sandbox/payer-rules/${payer.id}`, { key });
      expect(response.status, payer.id).toBe(200);
      const rules = response.body;
      expect(rules).toMatchObject({ payer_id: payer.id, name: payer.name, organization: `Organization/${payer.id}` });
      expect(service.fhirStore.read('Organization', payer.id)).toBeDefined();
      expect(rules.prior_authorization.standard_turnaround_hours).toBeLessThanOrEqual(CMS_0057_F_STANDARD_HOURS);
      expect(rules.prior_authorization.expedited_turnaround_hours).toBeLessThanOrEqual(CMS_0057_F_EXPEDITED_HOURS);
      expect(rules.prior_authorization.services.length).toBeGreaterThan(0);
      for (const service of rules.prior_authorization.services) {
        expect(service.code).toMatch(service.code_system === 'CPT' ? /^\d{5}$/ : /^[A-V]\d{4}$/);
        expect(service.required_documentation.length).toBeGreaterThan(0);
      }
      expect(rules.denial_reasons.map((reason: { carc: string }) => reason.carc)).toEqual(expect.arrayContaining(['197', '50']));
      expect(rules.eligibility.cost_sharing).toMatchObject({ preventive_covered_in_full: true });
    }
  });

  it('differs by payer where plans differ: an HMO needs referrals, Medicaid charges no copay', async () => {
    const hmo = (await service.call('/v1/sandbox/payer-rules/syn-payer-bramblewood', { key })).body;
    expect(hmo.eligibility.referral_required_for_specialist).toBe(true);
    expect(hmo.denial_reasons.map((reason: { carc: string }) => reason.carc)).toContain('288');
    const medicaid = (await service.call('/v1/sandbox/payer-rules/syn-payer-meadowlark', { key })).body;
    expect(medicaid).toMatchObject({
      plan_type: 'medicaid_managed_care',
      cms_0057_f_impacted: true,
      eligibility: { cost_sharing: { primary_care_copay: 0, annual_deductible: 0 } },
    });
  });

  it('answers 404 listing the payers for an unknown payer id', async () => {
    const response = await service.call('/v1/sandbox/payer-rules/syn-payer-nowhere', { key });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body.detail).toContain('syn-payer-alderpeak');
  });
});
