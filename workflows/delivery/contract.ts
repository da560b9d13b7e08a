import type { SearchAttributePair } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { CarriedDelivery } from '../../webhooks/claim-check';
import type { DeliveryStatusValue } from '../../webhooks/vocabulary';
import { ConnectionId, DeliveryStatus, EventType, OrgId, ScenarioId } from '../search-attributes';

/**
 * The delivery workflow's contract, shared by the workflow, the API, the worker and the tests:
 * its id, input, state, the Updates that steer it and the reasons it refuses them.
 */

/** One workflow per delivery, found by its business id. */
export const deliveryWorkflowId = (deliveryId: string) => `delivery-${deliveryId}`;

/**
 * Runs started with a revision take the behaviours it names without asking `patched()`: every
 * `patched()` call writes a marker and a TemporalChangeVersion search-attribute upsert into each new
 * run's history (two calls cost every delivery 4 events and a visibility write). Runs started before
 * revisions existed carry none and decide by the markers their histories recorded.
 *
 * 1: the first attempt records a new delivery (patch `first-attempt-records-delivery`), and a cancel
 *    answers at once while an attempt is in flight (patch `cancel-during-attempt`).
 *
 * A later change that must not alter running histories raises the revision; every start sets it
 * through deliveryWorkflowInput.
 */
export const DELIVERY_REVISION = 1;

export interface DeliveryWorkflowInput {
  deliveryId: string;
  /** The behaviours this run was started with (DELIVERY_REVISION); absent in runs started before revisions. */
  revision?: number;
  /** Delays before each retry, in ms (WEBHOOK_RETRY_SCHEDULE, fixed when the delivery is created). */
  retryScheduleMs: number[];
  /**
   * Set by the trigger: the delivery to record before the first attempt (if the API has not yet),
   * its envelope inline or, when large, as a claim check (webhooks/claim-check.ts).
   */
  newDelivery?: CarriedDelivery;
  /** Set when a replay starts a new run for a delivery whose earlier run has closed. */
  resumeFrom?: { status: DeliveryStatusValue; attemptsMade: number };
}

/** A new run's input, at today's revision. */
export function deliveryWorkflowInput(input: Omit<DeliveryWorkflowInput, 'revision'>): DeliveryWorkflowInput {
  return { ...input, revision: DELIVERY_REVISION };
}

export interface DeliveryState {
  status: DeliveryStatusValue;
  attemptsMade: number;
  nextAttemptAt: string | null;
}

export const deliveryStateQuery = defineQuery<DeliveryState>('deliveryState');
/** Answers once the delivery is cancelled; refused (DELIVERY_STATE_CONFLICT) once it is terminal. */
export const cancelDeliveryUpdate = defineUpdate<DeliveryState>('cancelDelivery');
/** Answers once the replay is accepted (state `pending`); refused unless the delivery is terminal. */
export const replayDeliveryUpdate = defineUpdate<DeliveryState>('replayDelivery');

/** The refusal code of both Updates, which the API answers as 409. */
export const DELIVERY_STATE_CONFLICT = 'delivery_state_conflict';

export const cannotCancel = (status: DeliveryStatusValue) =>
  `The delivery is already ${status}; only pending or retrying deliveries can be cancelled.`;
export const cannotReplay = (status: DeliveryStatusValue) => `The delivery is ${status}; only a finished delivery can be replayed.`;

/** What the Web UI can find a delivery run by. */
export function deliverySearchAttributes(delivery: {
  organizationId: string;
  event: string;
  status: DeliveryStatusValue;
  connectionId: string | null;
  scenarioId: string | null;
}): SearchAttributePair[] {
  return [
    { key: OrgId, value: delivery.organizationId },
    { key: EventType, value: delivery.event },
    { key: DeliveryStatus, value: delivery.status },
    ...(delivery.connectionId ? [{ key: ConnectionId, value: delivery.connectionId }] : []),
    ...(delivery.scenarioId ? [{ key: ScenarioId, value: delivery.scenarioId }] : []),
  ];
}
