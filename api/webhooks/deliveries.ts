import { z } from 'zod';
import { DEFAULT_MOCK_EVENT, eventCatalog, findEvent } from '../../catalog/events';
import { findScenario } from '../../catalog/scenarios';
import type { Delivery } from '../../drizzle/schema';
import type { FhirStore } from '../../fixtures/store';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { idSchema } from '../../platform/ids';
import { WorkflowClosedError, type WorkflowGateway } from '../../platform/workflow-gateway';
import { attemptsOf, findDelivery, listDeliveries, PAGE_ENVELOPE_BYTES, pendingDelivery, recordNewDelivery } from '../../webhooks/delivery-records';
import { type NewDelivery, newDelivery } from '../../webhooks/new-delivery';
import { DELIVERY_STATUSES, isTerminal } from '../../webhooks/vocabulary';
import {
  cancelDeliveryUpdate,
  cannotCancel,
  cannotReplay,
  DELIVERY_STATE_CONFLICT,
  deliverySearchAttributes,
  deliveryWorkflowId,
  deliveryWorkflowInput,
  replayDeliveryUpdate,
} from '../../workflows/delivery/contract';
import { deliveryWorkflow } from '../../workflows/delivery/workflow';
import { acceptWork } from '../http/accepted-work';
import { ownedConnection } from '../http/owned-rows';
import { decodeCursor, encodeCursor, pageQuerySchema, pageSchema } from '../http/pagination';
import { ApiProblem, invalidFields, notFound } from '../http/problem';
import { defineRoute } from '../http/route';
import { deliverySchema, presentDelivery } from './delivery-presenter';
import { startDelivery } from './start-delivery';

const acceptedDeliverySchema = deliverySchema
  .extend({ url: z.string().meta({ description: 'Where to follow this delivery' }) })
  .meta({ id: 'AcceptedDelivery' });

const triggerFields = {
  event: z
    .string()
    .min(1)
    .optional()
    .meta({ description: `An event name from the catalog (GET /v1/sandbox/catalog); default ${DEFAULT_MOCK_EVENT}` }),
  scenario_id: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_.-]{0,99}$/, 'scenario_id must be a scenario id from the catalog')
    .optional()
    .meta({ description: 'Tag the delivery with a catalog scenario' }),
  connection_id: idSchema('conn').optional().meta({ description: 'Deliver for this connection (its URL and secret when it has them)' }),
};
const triggerBodySchema = z.object(triggerFields).strict().meta({ id: 'TriggerMockEvent' });
const triggerQuerySchema = z.object(triggerFields);

const listQuerySchema = pageQuerySchema.extend({
  status: z.enum(DELIVERY_STATUSES).optional(),
  event: z.string().optional(),
  connection_id: idSchema('conn').optional(),
  created_after: z.iso.datetime({ message: 'created_after must be an ISO 8601 date-time, e.g. 2026-01-15T00:00:00Z' }).optional(),
  created_before: z.iso.datetime({ message: 'created_before must be an ISO 8601 date-time, e.g. 2026-01-15T00:00:00Z' }).optional(),
});

const deliveryParams = z.object({ id: idSchema('dlv') });

interface DeliveryRouteDependencies {
  db: Database;
  config: Config;
  workflows: WorkflowGateway;
  fhirStore: FhirStore;
}

/** Mock events, delivery history, and the cancel and replay Updates of the delivery workflows. */
export function webhookDeliveryRoutes({ db, config, workflows, fhirStore }: DeliveryRouteDependencies) {
  async function findOwned(organizationId: string, id: string): Promise<Delivery> {
    const delivery = await findDelivery(db, organizationId, id);
    if (!delivery) throw notFound('delivery', id, 'path.id');
    return delivery;
  }

  async function present(delivery: Delivery) {
    return presentDelivery(delivery, (await attemptsOf(db, [delivery.id])).get(delivery.id)!);
  }

  return [
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/trigger-mock-event',
      operationId: 'triggerMockEvent',
      summary: 'Send a mock event to your webhook receiver',
      description:
        'Creates a delivery whose envelope carries a synthetic FHIR R4 resource, and starts its delivery workflow. ' +
        '`event`, `scenario_id` and `connection_id` may come in the JSON body or, for compatibility, the query string (the body wins).',
      tag: 'Webhooks',
      auth: 'api_key',
      query: triggerQuerySchema,
      body: triggerBodySchema,
      success: {
        status: 202,
        description:
          'Accepted: the delivery workflow has started; the body is the delivery as accepted (`pending`), its progress is at `url`. Retried with the same Idempotency-Key after a lost answer, the same delivery.',
        schema: acceptedDeliverySchema,
      },
      errors: [404, 415, 422, 503],
      handler: async ({ auth, query, body, res }) => {
        const input = { ...query, ...body };
        const eventName = input.event ?? DEFAULT_MOCK_EVENT;
        const event = findEvent(eventName);
        if (!event) {
          const message = `unknown event "${eventName}"; GET /v1/sandbox/catalog lists the ${eventCatalog.size} valid events (e.g. ${DEFAULT_MOCK_EVENT})`;
          throw invalidFields('body', [{ path: 'body.event', message }], 'unknown_event');
        }
        if (input.scenario_id && !findScenario(input.scenario_id)) {
          throw new ApiProblem(404, 'not_found', `No scenario with id ${input.scenario_id} exists; GET /v1/sandbox/catalog lists the scenarios.`);
        }
        let environment = 'sandbox';
        if (input.connection_id) {
          const where = body.connection_id ? 'body.connection_id' : 'query.connection_id';
          environment = (await ownedConnection(db, auth.organizationId, input.connection_id, where)).environment;
        }
        // A retry with the same Idempotency-Key gets the first request's plan back (api/http/accepted-work.ts).
        const plan = (): NewDelivery =>
          newDelivery({
            organizationId: auth.organizationId,
            connectionId: input.connection_id ?? null,
            scenarioId: input.scenario_id ?? null,
            event: event.name,
            environment,
            occurredAt: new Date().toISOString(),
            resource: event.sampleResource(fhirStore),
          });
        const accepted = await acceptWork({
          res,
          plan,
          describe: (delivery) => `delivery ${delivery.id}`,
          start: (delivery) => startDelivery({ workflows, db }, delivery, config.WEBHOOK_RETRY_SCHEDULE),
          // The delivery as accepted; its progress is at its url. Recorded here too, so a GET right after finds it.
          answer: async (delivery) => {
            await recordNewDelivery(db, delivery);
            return presentDelivery(pendingDelivery(delivery), []);
          },
          fallback: (delivery) => presentDelivery(pendingDelivery(delivery), []),
        });
        const url = `/v1/webhooks/deliveries/${accepted.id}`;
        res.setHeader('Location', url);
        return { ...accepted, url };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/deliveries',
      operationId: 'listDeliveries',
      summary: 'List deliveries with their attempts, newest first',
      description: `A page holds up to \`limit\` deliveries, fewer when their envelopes pass ${PAGE_ENVELOPE_BYTES / 1024 / 1024} MiB together (a large HL7 v2 message makes an envelope of several MiB); \`next_cursor\` then continues after them.`,
      tag: 'Webhooks',
      auth: 'api_key',
      query: listQuerySchema,
      success: { status: 200, description: 'A page of deliveries', schema: pageSchema(deliverySchema) },
      errors: [400, 422],
      handler: async ({ auth, query }) => {
        const filter = {
          before: decodeCursor(query.cursor),
          status: query.status,
          event: query.event,
          connectionId: query.connection_id,
          createdAfter: query.created_after ? new Date(query.created_after) : undefined,
          createdBefore: query.created_before ? new Date(query.created_before) : undefined,
        };
        const page = await listDeliveries(db, auth.organizationId, filter, query.limit);
        const attempts = await attemptsOf(
          db,
          page.deliveries.map((row) => row.id),
        );
        const last = page.deliveries.at(-1);
        return {
          data: page.deliveries.map((row) => presentDelivery(row, attempts.get(row.id)!)),
          next_cursor: page.more && last ? encodeCursor(last.id) : null,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/deliveries/{id}',
      operationId: 'getDelivery',
      summary: 'Read a delivery: state, every attempt, the stored envelope',
      tag: 'Webhooks',
      auth: 'api_key',
      params: deliveryParams,
      success: { status: 200, description: 'The delivery', schema: deliverySchema },
      errors: [404],
      handler: async ({ auth, params }) => present(await findOwned(auth.organizationId, params.id)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/deliveries/{id}/cancel',
      operationId: 'cancelDelivery',
      summary: 'Cancel a pending or retrying delivery, even mid-backoff',
      description: 'Answers once the delivery workflow has cancelled it; 409 when the delivery has already finished.',
      tag: 'Webhooks',
      auth: 'api_key',
      params: deliveryParams,
      success: { status: 200, description: 'The cancelled delivery', schema: deliverySchema },
      errors: [404],
      handler: async ({ auth, params }) => {
        const delivery = await findOwned(auth.organizationId, params.id);
        try {
          await workflows.update(deliveryWorkflowId(delivery.id), cancelDeliveryUpdate);
        } catch (error) {
          if (!(error instanceof WorkflowClosedError)) throw error;
          // The run has closed, so the delivery is terminal: its row says which state it ended in.
          const { status } = await findOwned(auth.organizationId, params.id);
          throw new ApiProblem(409, DELIVERY_STATE_CONFLICT, cannotCancel(status));
        }
        return present(await findOwned(auth.organizationId, params.id));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/deliveries/{id}/replay',
      operationId: 'replayDelivery',
      summary: 'Re-send the stored envelope of a finished delivery as a new attempt',
      description:
        'Same envelope, same delivery id, recorded as a new attempt on the same delivery. Answers once the workflow has accepted the replay; 409 while the delivery is still pending or retrying.',
      tag: 'Webhooks',
      auth: 'api_key',
      params: deliveryParams,
      success: { status: 202, description: 'Accepted: the replay attempt is under way', schema: deliverySchema },
      errors: [404],
      handler: async ({ auth, params }) => {
        const delivery = await findOwned(auth.organizationId, params.id);
        if (!isTerminal(delivery.status)) throw new ApiProblem(409, DELIVERY_STATE_CONFLICT, cannotReplay(delivery.status));
        const attemptsMade = (await attemptsOf(db, [delivery.id])).get(delivery.id)!.length;
        // A closed run is restarted with the delivery's recorded state; a run still open takes the update itself.
        await workflows.updateWithStart(replayDeliveryUpdate, {
          workflow: deliveryWorkflow,
          workflowId: deliveryWorkflowId(delivery.id),
          args: [
            deliveryWorkflowInput({
              deliveryId: delivery.id,
              retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
              resumeFrom: { status: delivery.status, attemptsMade },
            }),
          ],
          organizationId: delivery.organizationId,
          searchAttributes: deliverySearchAttributes(delivery),
        });
        return present(await findOwned(auth.organizationId, params.id));
      },
    }),
  ];
}
