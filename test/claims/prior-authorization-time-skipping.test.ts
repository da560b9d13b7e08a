import { describe, expect, it } from 'vitest';
import { findAuthorizationById, recordSubmission } from '../../claims/pas/authorization-records';
import { payerFor, turnaroundHours } from '../../claims/pas/decision';
import { checkPasRequest, identifierKey } from '../../claims/pas/request';
import { loadProfileValidator } from '../../fhir/validation/profile-validator';
import { newId } from '../../platform/ids';
import { createOrganization } from '../../platform/organizations';
import { priorAuthWorkflow } from '../../workflows/prior-auth/workflow';
import { pasExamples } from '../support/fhir-validator';
import { durationMillis, useTimeSkipping } from '../support/time-skipping';

const suite = useTimeSkipping();

describe('a pended PAS authorization at realtime pace', () => {
  it("is decided after the payer's 7-day standard review, a durable timer run on the time-skipping server", async () => {
    const organization = await createOrganization(suite.db, { name: 'Time-skipping PAS Clinic (synthetic)', webhookUrl: null });
    const bundle: any = structuredClone((await pasExamples()).find((resource) => resource.id === 'MedicalServicesAuthorizationBundleExample'));
    bundle.entry.find((entry: any) => entry.resource.resourceType === 'Coverage').resource.subscriberId = 'SBX-PA-PENDED-APPROVED';
    const check = checkPasRequest(bundle, 'submit', await loadProfileValidator());
    if (!check.ok) throw new Error(JSON.stringify(check.issues));
    const rules = payerFor(check.summary.insurerIdentifiers);
    expect(turnaroundHours(rules, check.summary.expedited)).toBe(7 * 24);
    const { authorization } = await recordSubmission(
      suite.db,
      {
        id: newId('pa'),
        organizationId: organization.id,
        claimKey: identifierKey(check.summary.claim),
        payerId: rules.payer_id,
        expedited: false,
        requestedOutcome: 'pended_then_approved',
        outcomeSource: 'member_id',
        providerIdentifiers: check.summary.providerIdentifiers,
      },
      { id: newId('pas'), request: check.bundle, summary: check.summary },
    );

    const handle = await suite.environment.start(priorAuthWorkflow, {
      workflowId: authorization.workflowId,
      args: [
        { authorizationId: authorization.id, organizationId: organization.id, pace: { mode: 'realtime', time_scale: null }, retryScheduleMs: [1000] },
      ],
    });
    const final = await handle.result();
    expect(final.decision).toBe('certified');
    const timers = ((await handle.fetchHistory()).events ?? [])
      .filter((event) => event.timerStartedEventAttributes)
      .map((event) => durationMillis(event.timerStartedEventAttributes!.startToFireTimeout));
    // The review (7 days, measured from the pend), then the 30 days the decided authorization takes updates.
    expect(timers[0]).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(timers[0]).toBeLessThanOrEqual(7 * 86_400_000);
    expect(timers[1]).toBe(30 * 86_400_000);
    const row = await findAuthorizationById(suite.db, organization.id, authorization.id);
    expect(row!.decision).toBe('certified');
    expect(row!.closedAt).not.toBeNull();
  }, 120_000);
});
