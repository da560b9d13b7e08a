import type { Patient } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { webhookEnvelopeSchema } from '../../webhooks/envelope';
import { newDelivery } from '../../webhooks/new-delivery';

const patient: Patient = { resourceType: 'Patient', id: 'syn-pat-0001', meta: { tag: [{ system: 'urn:test', code: 'synthetic' }] } };
const request = {
  organizationId: 'org_01',
  connectionId: 'conn_01',
  environment: 'sandbox',
  event: 'adt.patient.admitted',
  occurredAt: '2026-01-02T03:04:05.000Z',
};

describe('newDelivery: the one place a delivery and its envelope are built', () => {
  it('writes the envelope of CONVENTIONS.md, in its field order, as the text every attempt sends', () => {
    const delivery = newDelivery({ ...request, resource: patient });
    const envelope = JSON.parse(delivery.envelopeBody);
    expect(Object.keys(envelope)).toEqual(['id', 'event', 'connection_id', 'environment', 'occurred_at', 'resource']);
    expect(webhookEnvelopeSchema.parse(envelope)).toMatchObject({
      event: request.event,
      connection_id: 'conn_01',
      occurred_at: request.occurredAt,
      resource: patient,
    });
    expect(envelope.id).toMatch(/^evt_/);
    expect(delivery).toMatchObject({
      organizationId: 'org_01',
      connectionId: 'conn_01',
      scenarioId: null,
      event: request.event,
      createdAt: request.occurredAt,
    });
    expect(delivery.id).toMatch(/^dlv_/);
  });

  it('splices a resource given as JSON text into the same text an object gives', () => {
    const ids = { event: 'evt_same', delivery: 'dlv_same' };
    const fromObject = newDelivery({ ...request, ids, resource: patient });
    const fromText = newDelivery({ ...request, ids, resource: { json: JSON.stringify(patient) } });
    expect(fromText.envelopeBody).toBe(fromObject.envelopeBody);
  });

  it('keeps derived ids, a separate creation time and the emitter fields it is given', () => {
    const delivery = newDelivery({
      ...request,
      resource: patient,
      ids: { event: 'evt_step', delivery: 'dlv_step' },
      createdAt: '2026-05-06T00:00:00.000Z',
      scenarioId: 'prior-auth',
      runId: 'run_01',
      stepId: 'submit',
    });
    expect(delivery).toMatchObject({
      id: 'dlv_step',
      createdAt: '2026-05-06T00:00:00.000Z',
      runId: 'run_01',
      stepId: 'submit',
      scenarioId: 'prior-auth',
    });
    expect(JSON.parse(delivery.envelopeBody)).toMatchObject({ id: 'evt_step', occurred_at: request.occurredAt });
  });
});
