import { findScenario } from '../catalog/scenarios';
import type { FhirStore } from '../fixtures/store';
import type { Database } from '../platform/database';
import { buildStepResources, simulatedTimeOf } from '../scenarios/content';
import { resourceStamp, stepDeliveryId, stepEventId } from '../scenarios/ids';
import type { RunPlan } from '../scenarios/plan';
import type { NewScenarioRun, ScenarioProgress } from '../scenarios/run';
import { findRun, recordNewRun, recordRunProgress } from '../scenarios/run-records';
import type { NewDelivery } from '../webhooks/new-delivery';
import { newDelivery } from '../webhooks/new-delivery';

export interface ScenarioActivityDependencies {
  db: Database;
  fhirStore: FhirStore;
}

/** The scenario activities: record a run and its progress, and build a step's deliveries. */
export function createScenarioActivities({ db, fhirStore }: ScenarioActivityDependencies) {
  return {
    async recordScenarioRun(run: NewScenarioRun): Promise<void> {
      await recordNewRun(db, run);
    },

    async recordScenarioProgress(input: { runId: string; progress: ScenarioProgress }): Promise<void> {
      await recordRunProgress(db, input.runId, input.progress);
    },

    /**
     * The deliveries a step emits, one per event, built from the stored run. Their ids come from
     * run, step and event, and the content from the plan and seed, so a retry builds the same ones.
     */
    async prepareStepDeliveries(input: { runId: string; stepIndex: number }): Promise<NewDelivery[]> {
      const run = await findRun(db, input.runId);
      if (!run) throw new Error(`Scenario run ${input.runId} does not exist`);
      if (!findScenario(run.scenarioId)) throw new Error(`Scenario ${run.scenarioId} is not in the catalog`);
      const plan = run.plan as RunPlan;
      const step = plan.steps[input.stepIndex]!;
      const content = {
        store: fhirStore,
        plan,
        stamp: resourceStamp({ runId: run.id, scenarioId: run.scenarioId, patientId: run.patientId, seed: run.seed }),
        simulatedStart: run.simulatedStart,
      };
      const occurredAt = simulatedTimeOf(content, step.id);
      return buildStepResources(content, step).map(({ event, resource }, eventIndex) =>
        newDelivery({
          ids: { event: stepEventId(run.id, step.id, eventIndex), delivery: stepDeliveryId(run.id, step.id, eventIndex) },
          organizationId: run.organizationId,
          connectionId: run.connectionId,
          scenarioId: run.scenarioId,
          runId: run.id,
          stepId: step.id,
          event,
          environment: run.environment,
          occurredAt,
          resource,
          createdAt: new Date().toISOString(),
        }),
      );
    },
  };
}
