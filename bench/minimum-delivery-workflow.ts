import { proxyActivities } from '@temporalio/workflow';

/** What the floor's workflow carries: the delivery's id and the event, inline. */
export interface MinimumDelivery {
  id: string;
  body: string;
}

/** The floor under a delivery (bench/minimum-delivery.ts): one workflow, one activity that sends the event and records the answer. */
const { sendOnce } = proxyActivities<{ sendOnce(delivery: MinimumDelivery): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function minimumDeliveryWorkflow(delivery: MinimumDelivery): Promise<void> {
  await sendOnce(delivery);
}
