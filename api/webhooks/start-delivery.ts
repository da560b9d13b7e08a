import type { Database } from '../../platform/database';
import type { WorkflowGateway } from '../../platform/workflow-gateway';
import { checkIn } from '../../webhooks/delivery-records';
import type { NewDelivery } from '../../webhooks/new-delivery';
import { deliverySearchAttributes, deliveryWorkflowId, deliveryWorkflowInput } from '../../workflows/delivery/contract';
import { deliveryWorkflow } from '../../workflows/delivery/workflow';

/**
 * Starts a new delivery's workflow, once per delivery id: starting it again (a retried request that
 * reserved the same id) attaches to the first run (WorkflowGateway.startOnce). The workflow records
 * the delivery itself; a large envelope is stored first and the workflow carries its claim check
 * (webhooks/claim-check.ts).
 */
export async function startDelivery(deps: { workflows: WorkflowGateway; db: Database }, delivery: NewDelivery, retryScheduleMs: number[]) {
  const carried = await checkIn(deps.db, delivery);
  return deps.workflows.startOnce(deliveryWorkflow, {
    workflowId: deliveryWorkflowId(delivery.id),
    args: [deliveryWorkflowInput({ deliveryId: delivery.id, retryScheduleMs, newDelivery: carried })],
    organizationId: delivery.organizationId,
    searchAttributes: deliverySearchAttributes({ ...delivery, status: 'pending' }),
  });
}
