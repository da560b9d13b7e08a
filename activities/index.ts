import type { Logger } from 'pino';
import { readClaimResponseFocus } from '../claims/pas/authorization-records';
import { createPriorAuthSteps } from '../claims/pas/steps';
import { type FhirStore, loadFhirStore } from '../fixtures/store';
import type { Database } from '../platform/database';
import { countOrganizations } from '../platform/organizations';
import { smartUrls } from '../smart/endpoints';
import type { ResolveHost } from '../webhooks/targets';
import { createAggregatorActivities } from './aggregator';
import { createDeliveryActivities } from './deliveries';
import { createExportActivities } from './exports';
import { createRetentionActivities } from './retention';
import { createScenarioActivities } from './scenarios';
import { createSubscriptionActivities, type FocusReader } from './subscriptions';

export interface ActivityDependencies {
  db: Database;
  allowPrivateTargets: boolean;
  webhookTimeoutMs: number;
  /** DELIVERY_SLOTS_PER_ORGANIZATION: attempts of one organization at once in this worker. */
  deliverySlotsPerOrganization?: number;
  /** Lends a waiting delivery attempt's worker slot (runtime/activity-slots.ts); without it a waiting attempt keeps its slot. */
  lendWorkerSlot?: () => () => void;
  /** The DNS lookup webhook targets are checked and pinned with; the system resolver when absent. */
  resolveHost?: ResolveHost;
  /** Where housekeeping activities report what they did (the retention counts). */
  logger?: Logger;
  /** The synthetic world scenario runs and the aggregator's simulated sources draw on; the committed one when absent. */
  fhirStore?: FhirStore;
  /** PUBLIC_BASE_URL: subscription notifications name the subscription and their focus by their URLs under it. */
  publicBaseUrl: string;
  /** What a subscription event's focus is (activities/subscriptions.ts FocusReader): the PAS authorizations' ClaimResponse when absent. */
  readFocus?: FocusReader;
}

/**
 * Every activity the worker runs, built from its dependencies (Temporal's dependency-injection
 * pattern) so tests and processes hand in their own database and settings.
 */
export function createActivities({
  db,
  allowPrivateTargets,
  webhookTimeoutMs,
  deliverySlotsPerOrganization,
  lendWorkerSlot,
  resolveHost,
  logger,
  fhirStore = loadFhirStore(),
  publicBaseUrl,
  readFocus = readClaimResponseFocus,
}: ActivityDependencies) {
  return {
    ...createDeliveryActivities({
      db,
      allowPrivateTargets,
      timeoutMs: webhookTimeoutMs,
      resolveHost,
      lendWorkerSlot,
      ...(deliverySlotsPerOrganization ? { slotsPerOrganization: deliverySlotsPerOrganization } : {}),
    }),
    ...createRetentionActivities({ db, logger }),
    ...createAggregatorActivities({ db, fhirStore }),
    ...createScenarioActivities({ db, fhirStore }),
    ...createExportActivities({ db, fhirStore }),
    // The prior-authorization steps; the `$submit` route runs the first of them too (claims/pas/steps.ts).
    ...createPriorAuthSteps(db),
    ...createSubscriptionActivities({ db, fhirBase: smartUrls(publicBaseUrl).fhirBase, readFocus }),

    /** Proves a workflow can reach the database through the worker. */
    async checkDatabase(): Promise<{ organizations: number }> {
      return { organizations: await countOrganizations(db) };
    },
  };
}

export type SandboxActivities = ReturnType<typeof createActivities>;
