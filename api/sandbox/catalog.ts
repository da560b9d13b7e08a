import { z } from 'zod';
import { DOMAIN_CATEGORIES, domains } from '../../catalog/domains';
import { type EventDefinition, eventCatalog } from '../../catalog/events';
import { exampleEnvelope } from '../../catalog/example-envelope';
import { isoDuration, outcomesOf, type ScenarioDefinition, scenarioDomains, scenarios, typicalDurationSeconds } from '../../catalog/scenarios';
import { SCENARIO_OUTCOMES } from '../../catalog/scenarios/definition';
import { payerRules, payerRulesSchema } from '../../claims/payer-rules';
import { PLAN_TYPES } from '../../claims/payers';
import { deepFreeze, type FhirStore } from '../../fixtures/store';
import { webhookEnvelopeSchema } from '../../webhooks/envelope';
import { pageOfSorted, pageQuerySchema, pageSchema } from '../http/pagination';
import { ApiProblem } from '../http/problem';
import { defineRoute } from '../http/route';

const eventSchema = z
  .object({
    name: z.string().meta({ example: 'prior_auth.request.pended' }),
    domain: z.string(),
    description: z.string(),
    example_envelope: webhookEnvelopeSchema,
  })
  .meta({ id: 'CatalogEvent' });

const scenarioSchema = z
  .object({
    id: z.string().meta({ example: 'prior_auth_approved_after_pend' }),
    name: z.string(),
    description: z.string(),
    domains: z.array(z.string()).meta({ description: 'The domains of the events its steps emit' }),
    typical_duration: z.string().meta({ description: 'ISO 8601 duration from the first step to the last', example: 'P3DT9H10M' }),
    typical_duration_seconds: z.number().int(),
    outcomes: z
      .array(z.enum(SCENARIO_OUTCOMES))
      .meta({ description: 'The `outcome` values a run of it accepts (empty when it does not branch); absent, the payer rules decide' }),
    run: z.string().meta({ description: 'Where to run it (POST)', example: '/v1/sandbox/scenarios/prior_auth_approved_after_pend/run' }),
    steps: z.array(
      z.object({
        id: z.string(),
        description: z.string(),
        emits: z.array(z.string()).meta({ description: 'Catalog event names, in order' }),
        typical_delay: z.string().meta({ description: 'ISO 8601 duration after the previous step', example: 'P1D' }),
        typical_delay_seconds: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'Scenario' });

const domainFields = {
  id: z.string().meta({ example: 'prior_auth' }),
  name: z.string(),
  category: z.enum(DOMAIN_CATEGORIES),
  description: z.string(),
  standards: z.array(z.string()),
  resource_types: z.array(z.string()).meta({ description: 'FHIR types its events carry; browse them at /v1/sandbox/resources/{type}' }),
};

const domainSummarySchema = z
  .object({
    ...domainFields,
    events: z.array(z.string()).meta({ description: 'Its event names' }),
    scenarios: z.array(z.string()).meta({ description: 'Ids of the scenarios that touch it' }),
  })
  .meta({ id: 'DomainSummary' });

const domainSchema = z.object({ ...domainFields, events: z.array(eventSchema), scenarios: z.array(scenarioSchema) }).meta({ id: 'Domain' });

const payerSummarySchema = z.object({
  payer_id: z.string(),
  name: z.string(),
  plan_type: z.enum(PLAN_TYPES),
  rules: z.string().meta({ description: 'Path of its rules', example: '/v1/sandbox/payer-rules/syn-payer-alderpeak' }),
});

const catalogSchema = z
  .object({
    domains: z.array(domainSummarySchema),
    events: z.array(eventSchema),
    scenarios: z.array(scenarioSchema),
    payers: z.array(payerSummarySchema),
  })
  .meta({ id: 'SandboxCatalog' });

function presentEvent(event: EventDefinition, store: FhirStore): z.input<typeof eventSchema> {
  return { name: event.name, domain: event.domain, description: event.description, example_envelope: exampleEnvelope(event, store) };
}

function presentScenario(scenario: ScenarioDefinition): z.input<typeof scenarioSchema> {
  const total = typicalDurationSeconds(scenario);
  return {
    id: scenario.id,
    name: scenario.name,
    description: scenario.description,
    domains: scenarioDomains(scenario),
    typical_duration: isoDuration(total),
    typical_duration_seconds: total,
    outcomes: [...outcomesOf(scenario.id)],
    run: `/v1/sandbox/scenarios/${scenario.id}/run`,
    steps: scenario.steps.map((step) => ({
      id: step.id,
      description: step.description,
      emits: [...step.emits],
      typical_delay: isoDuration(step.typicalDelaySeconds),
      typical_delay_seconds: step.typicalDelaySeconds,
    })),
  };
}

/**
 * The sandbox catalog (catalog/): domains with their events, example envelopes and scenarios, and
 * the payers' rules. Built once at start: the catalog is code, the same for every organization.
 */
export function sandboxCatalogRoutes({ fhirStore }: { fhirStore: FhirStore }) {
  const events = [...eventCatalog.values()].map((event) => presentEvent(event, fhirStore));
  const presentedScenarios = scenarios.map(presentScenario);
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
  const details = [...domains].sort(byId).map((domain) => ({
    id: domain.id,
    name: domain.name,
    category: domain.category,
    description: domain.description,
    standards: [...domain.standards],
    resource_types: [...domain.resourceTypes],
    events: events.filter((event) => event.domain === domain.id),
    scenarios: presentedScenarios.filter((scenario) => scenario.domains.includes(domain.id)),
  }));
  const summaries = details.map((detail) => ({
    ...detail,
    events: detail.events.map((event) => event.name),
    scenarios: detail.scenarios.map((scenario) => scenario.id),
  }));
  const payers = [...payerRules.values()].map((rules) => ({
    payer_id: rules.payer_id,
    name: rules.name,
    plan_type: rules.plan_type,
    rules: `/v1/sandbox/payer-rules/${rules.payer_id}`,
  }));
  // Frozen copies: the answers never change, so each one's JSON is written once (api/http/json.ts).
  const catalog = deepFreeze(structuredClone({ domains: summaries, events, scenarios: presentedScenarios, payers }));
  const frozenDetails = details.map((detail) => deepFreeze(structuredClone(detail)));
  const frozenRules = new Map([...payerRules].map(([id, rules]) => [id, deepFreeze(structuredClone(rules))]));
  const domainIds = summaries.map((summary) => summary.id).join(', ');

  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/catalog',
      operationId: 'getSandboxCatalog',
      summary: 'The whole catalog: domains, events with example envelopes, scenarios, payers',
      tag: 'Sandbox catalog',
      auth: 'api_key',
      success: { status: 200, description: 'The catalog', schema: catalogSchema },
      handler: async () => catalog,
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/domains',
      operationId: 'listSandboxDomains',
      summary: 'List the domains, by id',
      tag: 'Sandbox catalog',
      auth: 'api_key',
      query: pageQuerySchema.strict(),
      success: { status: 200, description: 'A page of domains', schema: pageSchema(domainSummarySchema) },
      errors: [400, 422],
      handler: async ({ query }) => pageOfSorted(summaries, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/domains/{domain_id}',
      operationId: 'getSandboxDomain',
      summary: 'A domain with its events (and example envelopes) and the scenarios that touch it',
      tag: 'Sandbox catalog',
      auth: 'api_key',
      params: z.object({ domain_id: z.string().meta({ example: 'prior_auth' }) }),
      success: { status: 200, description: 'The domain', schema: domainSchema },
      errors: [404],
      handler: async ({ params }) => {
        const domain = frozenDetails.find((detail) => detail.id === params.domain_id);
        if (!domain) throw new ApiProblem(404, 'not_found', `No domain with id ${params.domain_id}. The domains are: ${domainIds}.`);
        return domain;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/payer-rules/{payer_id}',
      operationId: 'getPayerRules',
      summary: 'A synthetic payer’s rules: prior authorization list and turnaround, eligibility, cost sharing, denial reasons',
      tag: 'Sandbox catalog',
      auth: 'api_key',
      params: z.object({ payer_id: z.string().meta({ example: 'syn-payer-alderpeak' }) }),
      success: { status: 200, description: 'The payer’s rules', schema: payerRulesSchema },
      errors: [404],
      handler: async ({ params }) => {
        const rules = frozenRules.get(params.payer_id);
        if (!rules)
          throw new ApiProblem(404, 'not_found', `No payer with id ${params.payer_id}. The payers are: ${[...payerRules.keys()].join(', ')}.`);
        return rules;
      },
    }),
  ];
}
