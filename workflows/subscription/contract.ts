import type { SearchAttributePair } from '@temporalio/common';
import { OrgId } from '../search-attributes';

/**
 * The subscription workflow's contract (FHIR Subscriptions, docs/api/fhir-subscriptions.md), shared
 * by the workflow, the API and the tests: its id, input and search attributes.
 */

/** One workflow per subscription, found by its id. */
export const subscriptionWorkflowId = (subscriptionId: string) => `subscription-${subscriptionId}`;

/** Ids and settings only: what a subscription sends is read from its row by the activities. */
export interface SubscriptionWorkflowInput {
  organizationId: string;
  subscriptionId: string;
  /** backport-heartbeat-period, in seconds; null: no heartbeats. */
  heartbeatSeconds: number | null;
  /** Subscription.end (ISO instant): the subscription turns `off` then; null: it runs until deleted. */
  end: string | null;
  /** The webhook retry schedule for heartbeats (WEBHOOK_RETRY_SCHEDULE); a handshake is one attempt. */
  retryScheduleMs: number[];
  /** Set when the workflow continues as new: heartbeats already sent (their keys go on from here); the handshake is behind it. */
  heartbeatsSent?: number;
}

/** How a subscription's workflow ended. */
export type SubscriptionWorkflowResult = 'active' | 'error' | 'off' | 'stopped';

export function subscriptionSearchAttributes(organizationId: string): SearchAttributePair[] {
  return [{ key: OrgId, value: organizationId }];
}
