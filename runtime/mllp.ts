import type { Logger } from 'pino';
import { mllpHandler } from '../hl7/inject';
import { createMllpServer } from '../hl7/mllp';
import { oversizeAck } from '../hl7/process';
import type { Config } from '../platform/config';
import type { Database } from '../platform/database';
import type { WorkflowClient } from '../platform/workflow-client';

export interface RunningMllpListener {
  port: number;
  close(): Promise<void>;
}

/**
 * The HL7 v2 MLLP listener (HL7_MLLP_PORT, default 2575; `off` or 0 turns it off): the same
 * pipeline as POST /v1/sandbox/hl7/inject, tied to a connection by the HL7 identity in MSH-5/MSH-6.
 */
export async function startMllpListener(
  deps: { config: Config; db: Database; workflows: WorkflowClient; logger: Logger },
  port = deps.config.HL7_MLLP_PORT,
): Promise<RunningMllpListener | null> {
  if (port === null) return null;
  const logger = deps.logger.child({ component: 'mllp' });
  const listener = createMllpServer({
    handle: mllpHandler({
      db: deps.db,
      workflows: deps.workflows,
      retryScheduleMs: deps.config.WEBHOOK_RETRY_SCHEDULE,
      onError: (error) => logger.error({ err: error }, 'An accepted HL7 message could not be queued for delivery'),
    }),
    tooLarge: (head) => oversizeAck(head, Number.POSITIVE_INFINITY).ack.er7,
    onConnectionError: (reason, peer) => logger.warn({ peer }, `MLLP connection closed: ${reason}`),
  });
  const bound = await listener.listen(port, deps.config.HOST);
  return { port: bound, close: listener.close };
}
