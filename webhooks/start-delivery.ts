import type { WorkflowClient } from '../platform/workflow-client';
import { deliverySearchAttributes, deliveryWorkflowId } from '../workflows/delivery/contract';
import { deliveryWorkflow } from '../workflows/delivery/workflow';
import type { NewDelivery } from './delivery-records';

/**
 * Starts a new delivery's workflow, once per delivery id: starting it again (a retried request that
 * reserved the same id) attaches to the first run (WorkflowClient.startOnce). The workflow records
 * the delivery itself.
 */
export function startDelivery(workflows: WorkflowClient, delivery: NewDelivery, retryScheduleMs: number[]) {
  return workflows.startOnce(deliveryWorkflow, {
    workflowId: deliveryWorkflowId(delivery.id),
    args: [{ deliveryId: delivery.id, retryScheduleMs, newDelivery: delivery }],
    searchAttributes: deliverySearchAttributes({ ...delivery, status: 'pending' }),
  });
}
