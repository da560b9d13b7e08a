import { type Client, WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { and, asc, desc, eq, gte, inArray, lt, lte } from 'drizzle-orm';
import { z } from 'zod';
import type { WebhookEnvelope } from '../../webhooks/envelope';
import { DEFAULT_MOCK_EVENT, eventCatalog, findEvent } from '../../catalog/events';
import { findScenario } from '../../catalog/scenarios';
import { connections, DELIVERY_STATUSES, type Delivery, type DeliveryAttempt, deliveries, deliveryAttempts } from '../../drizzle/schema';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { type NewDelivery, recordNewDelivery } from '../../webhooks/delivery-records';
import { newId } from '../../platform/ids';
import {
  cancelDeliveryUpdate,
  DELIVERY_TERMINAL_FAILURE,
  type DeliveryWorkflowInput,
  deliveryWorkflow,
  replayDeliveryUpdate,
} from '../../workflows/delivery/workflow';
import { ConnectionId, DeliveryStatus, EventType, OrgId, ScenarioId } from '../../workflows/search-attributes';
import { decodeCursor, pageQuerySchema, pageSchema, toPage } from '../http/pagination';
import { ApiProblem, notFound } from '../http/problem';
import { defineRoute } from '../http/route';

const attemptSchema = z
  .object({
    id: z.string(),
    number: z.number().int().meta({ description: '1 for the first attempt; retries and replays count on' }),
    trigger: z.enum(['initial', 'retry', 'replay']),
    attempted_at: z.iso.datetime(),
    duration_ms: z.number().int(),
    target_url: z.string().nullable().meta({ description: 'Where this attempt was sent, resolved when it was made' }),
    target_source: z.enum(['connection', 'organization']).nullable(),
    outcome: z.enum(['succeeded', 'failed', 'gone']),
    response_status: z.number().int().nullable(),
    response_body: z.string().nullable().meta({ description: 'The first 2 KiB of the receiver\'s answer' }),
    error: z.string().nullable(),
    chaos: z.enum(['transient_503', 'slow', 'rate_limit']).nullable().meta({ description: 'The chaos mode that touched this attempt' }),
  })
  .meta({ id: 'DeliveryAttempt' });

const deliverySchema = z
  .object({
    id: z.string().meta({ example: 'dlv_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    event: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    connection_id: z.string().nullable(),
    scenario_id: z.string().nullable(),
    environment: z.string(),
    attempts: z.array(attemptSchema),
    envelope: z.record(z.string(), z.unknown()).meta({ description: 'The stored envelope: the exact JSON every attempt and replay sends' }),
    next_attempt_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Delivery' });

const acceptedDeliverySchema = deliverySchema.extend({ url: z.string().meta({ description: 'Where to follow this delivery' }) }).meta({ id: 'AcceptedDelivery' });

const triggerFields = {
  event: z.string().min(1).optional().meta({ description: `An event name from the catalog (GET /v1/sandbox/catalog); default ${DEFAULT_MOCK_EVENT}` }),
  scenario_id: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,99}$/, 'scenario_id must be a scenario id from the catalog').optional().meta({ description: 'Tag the delivery with a catalog scenario' }),
  connection_id: z.string().min(1).optional().meta({ description: 'Deliver for this connection (its URL and secret when it has them)' }),
};
const triggerBodySchema = z.object(triggerFields).strict().meta({ id: 'TriggerMockEvent' });
const triggerQuerySchema = z.object(triggerFields);

const listQuerySchema = pageQuerySchema.extend({
  status: z.enum(DELIVERY_STATUSES).optional(),
  event: z.string().optional(),
  connection_id: z.string().optional(),
  created_after: z.iso.datetime({ message: 'created_after must be an ISO 8601 date-time, e.g. 2026-01-15T00:00:00Z' }).optional(),
  created_before: z.iso.datetime({ message: 'created_before must be an ISO 8601 date-time, e.g. 2026-01-15T00:00:00Z' }).optional(),
});

const deliveryParams = z.object({ id: z.string().meta({ description: 'A `dlv_` id' }) });

function presentAttempt(attempt: DeliveryAttempt): z.input<typeof attemptSchema> {
  return {
    id: attempt.id,
    number: attempt.number,
    trigger: attempt.trigger,
    attempted_at: attempt.startedAt.toISOString(),
    duration_ms: attempt.durationMs,
    target_url: attempt.targetUrl,
    target_source: attempt.targetSource,
    outcome: attempt.outcome,
    response_status: attempt.responseStatus,
    response_body: attempt.responseBody,
    error: attempt.error,
    chaos: attempt.chaos as z.input<typeof attemptSchema>['chaos'],
  };
}

function presentDelivery(delivery: Delivery, attempts: DeliveryAttempt[]): z.input<typeof deliverySchema> {
  return {
    id: delivery.id,
    event: delivery.event,
    status: delivery.status,
    connection_id: delivery.connectionId,
    scenario_id: delivery.scenarioId,
    environment: delivery.environment,
    attempts: attempts.map(presentAttempt),
    envelope: JSON.parse(delivery.envelopeBody),
    next_attempt_at: delivery.nextAttemptAt?.toISOString() ?? null,
    created_at: delivery.createdAt.toISOString(),
    updated_at: delivery.updatedAt.toISOString(),
  };
}

export const deliveryWorkflowId = (deliveryId: string) => `delivery-${deliveryId}`;

/** An update sent to a run that has finished: the delivery is terminal. */
function runHasClosed(error: unknown): boolean {
  return /already completed|workflow execution already finished/i.test((error as Error).message);
}

/** Mock events, delivery history, and the cancel and replay signals of the delivery workflows. */
export function webhookDeliveryRoutes({ db, config, temporal }: { db: Database; config: Config; temporal: Client }) {
  async function attemptsOf(deliveryIds: string[]): Promise<Map<string, DeliveryAttempt[]>> {
    const byDelivery = new Map<string, DeliveryAttempt[]>(deliveryIds.map((id) => [id, []]));
    if (deliveryIds.length === 0) return byDelivery;
    const rows = await db.select().from(deliveryAttempts).where(inArray(deliveryAttempts.deliveryId, deliveryIds)).orderBy(asc(deliveryAttempts.number));
    for (const row of rows) byDelivery.get(row.deliveryId)!.push(row);
    return byDelivery;
  }

  async function findOwned(organizationId: string, id: string): Promise<Delivery> {
    const [delivery] = await db.select().from(deliveries).where(and(eq(deliveries.organizationId, organizationId), eq(deliveries.id, id)));
    if (!delivery) throw notFound('delivery', id);
    return delivery;
  }

  async function present(delivery: Delivery) {
    return presentDelivery(delivery, (await attemptsOf([delivery.id])).get(delivery.id)!);
  }

  function searchAttributes(delivery: Pick<Delivery, 'organizationId' | 'event' | 'status' | 'connectionId' | 'scenarioId'>): SearchAttributePair[] {
    return [
      { key: OrgId, value: delivery.organizationId },
      { key: EventType, value: delivery.event },
      { key: DeliveryStatus, value: delivery.status },
      ...(delivery.connectionId ? [{ key: ConnectionId, value: delivery.connectionId }] : []),
      ...(delivery.scenarioId ? [{ key: ScenarioId, value: delivery.scenarioId }] : []),
    ];
  }

  /** A workflow's refusal (the delivery is in the wrong state) becomes 409 with its reason. */
  function refusalFrom(error: unknown): ApiProblem | null {
    if (!(error instanceof WorkflowUpdateFailedError)) return null;
    const cause = error.cause as { type?: string; message?: string } | undefined;
    return cause?.type === DELIVERY_TERMINAL_FAILURE ? new ApiProblem(409, 'delivery_state_conflict', cause.message ?? 'The delivery is in the wrong state.') : null;
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
      success: { status: 202, description: 'Accepted: the delivery workflow has started', schema: acceptedDeliverySchema },
      errors: [404, 415, 422, 503],
      handler: async ({ auth, query, body, res }) => {
        const input = { ...query, ...body };
        const eventName = input.event ?? DEFAULT_MOCK_EVENT;
        const event = findEvent(eventName);
        if (!event) {
          const message = `unknown event "${eventName}"; GET /v1/sandbox/catalog lists the ${eventCatalog.size} valid events (e.g. ${DEFAULT_MOCK_EVENT})`;
          throw new ApiProblem(422, 'unknown_event', `The event is not in the catalog: ${message}.`, { errors: [{ path: 'body.event', message }] });
        }
        if (input.scenario_id && !findScenario(input.scenario_id)) {
          throw new ApiProblem(404, 'not_found', `No scenario with id ${input.scenario_id} exists; GET /v1/sandbox/catalog lists the scenarios.`);
        }
        let environment = 'sandbox';
        if (input.connection_id) {
          const [connection] = await db
            .select({ environment: connections.environment })
            .from(connections)
            .where(and(eq(connections.organizationId, auth.organizationId), eq(connections.id, input.connection_id)));
          if (!connection) throw notFound('connection', input.connection_id);
          environment = connection.environment;
        }
        const envelope: WebhookEnvelope = {
          id: newId('evt'),
          event: event.name,
          connection_id: input.connection_id ?? null,
          environment,
          occurred_at: new Date().toISOString(),
          resource: event.sampleResource(),
        };
        const newDelivery: NewDelivery = {
          id: newId('dlv'),
          organizationId: auth.organizationId,
          connectionId: input.connection_id ?? null,
          scenarioId: input.scenario_id ?? null,
          event: event.name,
          environment,
          envelopeBody: JSON.stringify(envelope),
          createdAt: new Date().toISOString(),
        };
        const workflowInput: DeliveryWorkflowInput = { deliveryId: newDelivery.id, retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE, newDelivery };
        try {
          await temporal.workflow.start(deliveryWorkflow, {
            workflowId: deliveryWorkflowId(newDelivery.id),
            taskQueue: config.TEMPORAL_TASK_QUEUE,
            args: [workflowInput],
            typedSearchAttributes: searchAttributes({ ...newDelivery, status: 'pending' }),
          });
        } catch (error) {
          throw new ApiProblem(503, 'workflow_engine_unavailable', `The delivery could not be started (${(error as Error).message}); nothing was sent. Retry shortly.`);
        }
        await recordNewDelivery(db, newDelivery);
        const delivery = await findOwned(auth.organizationId, newDelivery.id);
        const url = `/v1/webhooks/deliveries/${delivery.id}`;
        res.setHeader('Location', url);
        return { ...(await present(delivery)), url };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/deliveries',
      operationId: 'listDeliveries',
      summary: 'List deliveries with their attempts, newest first',
      tag: 'Webhooks',
      auth: 'api_key',
      query: listQuerySchema,
      success: { status: 200, description: 'A page of deliveries', schema: pageSchema(deliverySchema) },
      errors: [400, 422],
      handler: async ({ auth, query }) => {
        const before = decodeCursor(query.cursor);
        const rows = await db
          .select()
          .from(deliveries)
          .where(
            and(
              eq(deliveries.organizationId, auth.organizationId),
              before ? lt(deliveries.id, before) : undefined,
              query.status ? eq(deliveries.status, query.status) : undefined,
              query.event ? eq(deliveries.event, query.event) : undefined,
              query.connection_id ? eq(deliveries.connectionId, query.connection_id) : undefined,
              query.created_after ? gte(deliveries.createdAt, new Date(query.created_after)) : undefined,
              query.created_before ? lte(deliveries.createdAt, new Date(query.created_before)) : undefined,
            ),
          )
          .orderBy(desc(deliveries.id))
          .limit(query.limit + 1);
        const attempts = await attemptsOf(rows.slice(0, query.limit).map((row) => row.id));
        return toPage(rows, query.limit, (row) => presentDelivery(row, attempts.get(row.id)!));
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
          await temporal.workflow.getHandle(deliveryWorkflowId(delivery.id)).executeUpdate(cancelDeliveryUpdate);
        } catch (error) {
          if (!(error instanceof WorkflowNotFoundError || runHasClosed(error))) throw refusalFrom(error) ?? error;
          const { status } = await findOwned(auth.organizationId, params.id);
          throw new ApiProblem(409, 'delivery_state_conflict', `The delivery is already ${status}; only pending or retrying deliveries can be cancelled.`);
        }
        return present(await findOwned(auth.organizationId, params.id));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/deliveries/{id}/replay',
      operationId: 'replayDelivery',
      summary: 'Re-send the stored envelope of a finished delivery as a new attempt',
      description: 'Same envelope, same delivery id, recorded as a new attempt on the same delivery. Answers once the workflow has accepted the replay; 409 while the delivery is still pending or retrying.',
      tag: 'Webhooks',
      auth: 'api_key',
      params: deliveryParams,
      success: { status: 202, description: 'Accepted: the replay attempt is under way', schema: deliverySchema },
      errors: [404],
      handler: async ({ auth, params }) => {
        const delivery = await findOwned(auth.organizationId, params.id);
        if (delivery.status === 'pending' || delivery.status === 'retrying') {
          throw new ApiProblem(409, 'delivery_state_conflict', `The delivery is ${delivery.status}; only a finished delivery can be replayed.`);
        }
        const attemptsMade = (await attemptsOf([delivery.id])).get(delivery.id)!.length;
        // A closed run is restarted with the delivery's recorded state; a run still open takes the update itself.
        const startWorkflowOperation = new WithStartWorkflowOperation(deliveryWorkflow, {
          workflowId: deliveryWorkflowId(delivery.id),
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ deliveryId: delivery.id, retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE, resumeFrom: { status: delivery.status, attemptsMade } }],
          typedSearchAttributes: searchAttributes(delivery),
        });
        try {
          await temporal.workflow.executeUpdateWithStart(replayDeliveryUpdate, { startWorkflowOperation });
        } catch (error) {
          throw refusalFrom(error) ?? error;
        }
        return present(await findOwned(auth.organizationId, params.id));
      },
    }),
  ];
}
