import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { SandboxActivities } from '../../activities';
import type { ExportPlan } from '../../interop/bulk-export/export';
import type { PlannedStep } from '../../scenarios/plan';
import type { NewScenarioRun, ScenarioProgress } from '../../scenarios/run';
import type { DeliveryStatusValue } from '../../webhooks/vocabulary';

/**
 * In-memory stand-ins for the activities the delivery, scenario and export workflows call, typed by
 * the activities themselves (a fake whose signature drifts from the real one does not compile). They
 * answer from scripts the test writes and keep what each was asked, so a workflow's decisions (retry,
 * cancel, replay, pace, expiry) are tested on the time-skipping server with no database, receiver or
 * network: `useTimeSkippingWith(fakes.activities)` (./time-skipping.ts).
 */

type Activities = Pick<
  SandboxActivities,
  | 'attemptDelivery'
  | 'recordNewDelivery'
  | 'recordDeliveryState'
  | 'recordExhaustedDelivery'
  | 'recordScenarioRun'
  | 'recordScenarioProgress'
  | 'prepareStepDeliveries'
  | 'planExport'
  | 'writeExportType'
  | 'endExport'
  | 'discardExport'
>;
type AttemptInput = Parameters<Activities['attemptDelivery']>[0];
export type AttemptResult = Awaited<ReturnType<Activities['attemptDelivery']>>;
type NewDelivery = NonNullable<Awaited<ReturnType<Activities['recordExhaustedDelivery']>>>;

export const answers = {
  ok: { outcome: 'succeeded', responseStatus: 200, retryAfterMs: null },
  unavailable: { outcome: 'failed', responseStatus: 503, retryAfterMs: null },
  gone: { outcome: 'gone', responseStatus: 410, retryAfterMs: null },
  tooManyRequests: (retryAfterMs: number) => ({ outcome: 'failed', responseStatus: 429, retryAfterMs }),
} satisfies Record<string, AttemptResult | ((...args: never[]) => AttemptResult)>;

/** A delivery as a test hands it to the delivery workflow (only its id and event matter to the fakes). */
export function fakeDelivery(id: string, event = 'adt.patient.admitted'): NewDelivery {
  return {
    id,
    organizationId: 'org_fake',
    connectionId: null,
    scenarioId: null,
    event,
    environment: 'sandbox',
    envelopeBody: JSON.stringify({ id: `evt-${id}`, event, note: 'synthetic' }),
    createdAt: new Date().toISOString(),
  };
}

export interface ExportScript {
  plan: ExportPlan;
  /** What writing a type answers: `discarded` when the export was deleted meanwhile, or an error that is not retried. */
  onWrite?: (type: string) => 'written' | 'discarded' | Error;
}

export function createFakeActivities() {
  /** What the receiver answers each delivery's attempts, in the order this fake sees them; the last answer repeats, and an unscripted delivery succeeds. */
  const receiver = new Map<string, AttemptResult[]>();
  /** Attempts the test holds in flight (by delivery id and attempt number) until it releases them. */
  const holds = new Map<string, { reached: () => void; released: Promise<void> }>();
  const attempts = new Map<string, AttemptInput[]>();
  const states = new Map<string, { status: DeliveryStatusValue; nextAttemptAt: string | null }[]>();
  const exhausted: string[] = [];
  const runs = new Map<string, NewScenarioRun>();
  const progress = new Map<string, ScenarioProgress[]>();
  const exportScripts = new Map<string, ExportScript>();
  const exportCalls = new Map<string, string[]>();

  const note = (exportId: string, call: string) => exportCalls.set(exportId, [...(exportCalls.get(exportId) ?? []), call]);

  const activities: Activities = {
    async attemptDelivery(input) {
      const sent = [...(attempts.get(input.deliveryId) ?? []), input];
      attempts.set(input.deliveryId, sent);
      const hold = holds.get(`${input.deliveryId}#${input.attemptNumber}`);
      if (hold) {
        hold.reached();
        // Heartbeats while held, as the real attempt does, so its heartbeat timeout does not end it.
        let released = false;
        void hold.released.then(() => {
          released = true;
        });
        while (!released) {
          Context.current().heartbeat();
          await Promise.race([hold.released, sleep(500)]);
        }
      }
      const script = receiver.get(input.deliveryId) ?? [answers.ok];
      return script[Math.min(sent.length - 1, script.length - 1)]!;
    },
    async recordNewDelivery() {},
    async recordDeliveryState({ deliveryId, status, nextAttemptAt }) {
      states.set(deliveryId, [...(states.get(deliveryId) ?? []), { status, nextAttemptAt }]);
    },
    async recordExhaustedDelivery({ deliveryId }) {
      exhausted.push(deliveryId);
      // A report never reports on itself (the real activity answers null for one, too).
      return deliveryId.startsWith('report-')
        ? null
        : { ...fakeDelivery(`report-${deliveryId}`, 'webhook.delivery.exhausted'), sourceDeliveryId: deliveryId };
    },
    async recordScenarioRun(run) {
      runs.set(run.id, run);
    },
    async recordScenarioProgress({ runId, progress: next }) {
      progress.set(runId, [...(progress.get(runId) ?? []), next]);
    },
    async prepareStepDeliveries({ runId, stepIndex }) {
      const run = runs.get(runId);
      if (!run) throw new Error(`Scenario run ${runId} was never recorded`);
      const step = (run.plan as { steps: PlannedStep[] }).steps[stepIndex]!;
      return step.emits.map((event, index) => ({ ...fakeDelivery(`${runId}-${step.id}-${index}`, event), runId, stepId: step.id }));
    },
    async planExport({ exportId }) {
      note(exportId, 'plan');
      const script = exportScripts.get(exportId);
      if (!script) throw new Error(`No script for export ${exportId}`);
      return script.plan;
    },
    async writeExportType({ exportId, type }) {
      note(exportId, `write ${type}`);
      const written = exportScripts.get(exportId)?.onWrite?.(type) ?? 'written';
      if (written instanceof Error) throw ApplicationFailure.nonRetryable(written.message);
      return written;
    },
    async endExport({ exportId, fileLifetimeHours, failure }) {
      note(exportId, `end after ${fileLifetimeHours} h: ${failure ?? 'completed'}`);
      return failure === null ? 'completed' : 'failed';
    },
    async discardExport({ exportId }) {
      note(exportId, 'discard');
    },
  };

  return {
    activities,
    /** Scripts the receiver's answers to one delivery's attempts. */
    receiverAnswers(deliveryId: string, ...script: AttemptResult[]): void {
      receiver.set(deliveryId, script);
    },
    /** Holds an attempt in flight: resolves `reached` when the workflow sends it, and lets it answer on `release()`. */
    hold(deliveryId: string, attemptNumber: number): { reached: Promise<void>; release: () => void } {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      holds.set(`${deliveryId}#${attemptNumber}`, { reached, released });
      return { reached: reachedPromise, release };
    },
    scriptExport(exportId: string, script: ExportScript): void {
      exportScripts.set(exportId, script);
    },
    attemptsOf: (deliveryId: string) => (attempts.get(deliveryId) ?? []).map((attempt) => `${attempt.trigger} #${attempt.attemptNumber}`),
    statesOf: (deliveryId: string) => states.get(deliveryId) ?? [],
    exhausted,
    progressOf: (runId: string) => progress.get(runId) ?? [],
    exportCallsOf: (exportId: string) => exportCalls.get(exportId) ?? [],
  };
}
