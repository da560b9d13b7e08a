import type { Config } from '../../platform/config';
import { createCostBudget } from '../../platform/cost-budget';
import { createLogger } from '../../platform/logger';
import { createWorkflowGateway } from '../../platform/workflow-gateway';
import { type RunningMllpListener, startMllpListener } from '../../runtime/mllp';
import type { TestService } from './service';

/** The MLLP listener on a free port, for a test service's database and Temporal, silent, with `config` over the service's. */
export async function startTestMllpListener(service: TestService, config: Partial<Config> = {}): Promise<RunningMllpListener> {
  const listener = await startMllpListener(
    {
      config: { ...service.config, ...config },
      db: service.database.db,
      workflows: createWorkflowGateway(service.temporal, service.taskQueue),
      logger: createLogger('silent', { pretty: false }),
      failedAuthentications: createCostBudget(config.FAILED_AUTH_PER_MINUTE ?? service.config.FAILED_AUTH_PER_MINUTE),
    },
    0,
  );
  return listener!;
}
