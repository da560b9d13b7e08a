import type { Logger } from 'pino';
import { startDelivery } from '../api/webhooks/start-delivery';
import { mllpHandler } from '../hl7/inject';
import { createMllpServer } from '../hl7/mllp';
import { oversizeAck } from '../hl7/process';
import type { Config } from '../platform/config';
import { type CostBudget, createCostBudget } from '../platform/cost-budget';
import type { Database } from '../platform/database';
import type { WorkflowGateway } from '../platform/workflow-gateway';

export interface RunningMllpListener {
  port: number;
  close(): Promise<void>;
}

/**
 * The HL7 v2 MLLP listener (HL7_MLLP_PORT, default 2575; `off` or 0 turns it off; on
 * HL7_MLLP_HOST, loopback by default): the same pipeline as POST /v1/sandbox/hl7/inject, for the
 * connection whose MLLP token a message carries in MSH-8. Large messages are parsed and mapped off
 * the event loop (hl7/off-loop.ts), so the API keeps answering meanwhile.
 */
export async function startMllpListener(
  deps: { config: Config; db: Database; workflows: WorkflowGateway; logger: Logger; failedAuthentications: CostBudget },
  port = deps.config.HL7_MLLP_PORT,
): Promise<RunningMllpListener | null> {
  if (port === null) return null;
  const logger = deps.logger.child({ component: 'mllp' });
  const listener = createMllpServer({
    handle: mllpHandler({
      db: deps.db,
      startDelivery: (delivery) => startDelivery(deps, delivery, deps.config.WEBHOOK_RETRY_SCHEDULE),
      budget: createCostBudget(deps.config.HL7_RATE_LIMIT_PER_MINUTE),
      failedAuthentications: deps.failedAuthentications,
      onError: (error) => logger.error({ err: error }, 'An HL7 message over MLLP could not be processed or queued for delivery'),
    }),
    tooLarge: (head) => oversizeAck(head, Number.POSITIVE_INFINITY).ack.er7,
    maxConnections: deps.config.HL7_MLLP_MAX_CONNECTIONS,
    maxConnectionsPerAddress: deps.config.HL7_MLLP_MAX_CONNECTIONS_PER_ADDRESS,
    onConnectionError: (reason, peer) => logger.warn({ peer }, `MLLP connection closed: ${reason}`),
  });
  const bound = await listener.listen(port, deps.config.HL7_MLLP_HOST);
  return { port: bound, close: listener.close };
}
