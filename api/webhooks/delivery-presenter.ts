import { z } from 'zod';
import type { Delivery, DeliveryAttempt } from '../../drizzle/schema';
import { ATTEMPT_OUTCOMES, ATTEMPT_TRIGGERS, CHAOS_MODES, DELIVERY_STATUSES, TARGET_SOURCES } from '../../webhooks/vocabulary';
import { storedJson } from '../http/json';

/** How a delivery and its attempts look to partners (CONVENTIONS.md, Webhooks: delivery fields). */

export const attemptSchema = z
  .object({
    id: z.string(),
    number: z.number().int().meta({ description: '1 for the first attempt; retries and replays count on' }),
    trigger: z.enum(ATTEMPT_TRIGGERS),
    attempted_at: z.iso.datetime(),
    duration_ms: z.number().int().nullable().meta({ description: 'Null while the attempt is `sending` and when its outcome is `unknown`' }),
    target_url: z.string().nullable().meta({ description: 'Where this attempt was sent, resolved when it was made' }),
    target_source: z.enum(TARGET_SOURCES).nullable(),
    outcome: z.enum(ATTEMPT_OUTCOMES).meta({
      description:
        '`succeeded` (2xx), `failed`, `gone` (410: the delivery stopped). `sending`: recorded before the request went out, its answer not yet in. ' +
        '`unknown`: the worker making the attempt stopped before recording the answer, so the receiver may or may not have received it (counted as failed).',
    }),
    response_status: z.number().int().nullable(),
    response_body: z.string().nullable().meta({ description: "The first 2 KiB of the receiver's answer" }),
    error: z.string().nullable(),
    chaos: z.enum(CHAOS_MODES).nullable().meta({ description: 'The chaos mode that touched this attempt' }),
  })
  .meta({ id: 'DeliveryAttempt' });

export const deliverySchema = z
  .object({
    id: z.string().meta({ example: 'dlv_01jd8x3m0ae8v9q2w1f4k7t5zr' }),
    event: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    connection_id: z.string().nullable(),
    scenario_id: z.string().nullable(),
    environment: z.string(),
    hl7_control_id: z.string().nullable().meta({ description: 'MSH-10 of the HL7 v2 message this delivery carries; null for other deliveries' }),
    run_id: z.string().nullable().meta({ description: 'The scenario run that emitted this delivery; null for other deliveries' }),
    step_id: z.string().nullable().meta({ description: "The run's step that emitted it" }),
    attempts: z.array(attemptSchema),
    envelope: z.record(z.string(), z.unknown()).meta({ description: 'The stored envelope: the exact JSON every attempt and replay sends' }),
    next_attempt_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Delivery' });

export type PresentedDelivery = z.input<typeof deliverySchema>;

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
    chaos: attempt.chaos,
  };
}

export function presentDelivery(delivery: Delivery, attempts: DeliveryAttempt[]): PresentedDelivery {
  return {
    id: delivery.id,
    event: delivery.event,
    status: delivery.status,
    connection_id: delivery.connectionId,
    scenario_id: delivery.scenarioId,
    environment: delivery.environment,
    hl7_control_id: delivery.hl7ControlId,
    run_id: delivery.runId,
    step_id: delivery.stepId,
    attempts: attempts.map(presentAttempt),
    // As stored and sent: parsing and writing again a large HL7 message's envelope would hold the event loop.
    envelope: storedJson(delivery.envelopeBody),
    next_attempt_at: delivery.nextAttemptAt?.toISOString() ?? null,
    created_at: delivery.createdAt.toISOString(),
    updated_at: delivery.updatedAt.toISOString(),
  };
}
