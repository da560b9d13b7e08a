import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectTemporal } from '../../runtime/temporal';
import { searchAttributeKeys } from '../../workflows/search-attributes';
import type { selfCheckWorkflow } from '../../workflows/self-check/workflow';
import { startTestService, type TestService } from '../support/service';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.stop());

describe('Temporal round trip', () => {
  it('runs a workflow through the worker, whose activity reads the real database', async () => {
    await service.newTenant();
    await service.newTenant();
    const result = await service.temporal.workflow.execute<typeof selfCheckWorkflow>('selfCheckWorkflow', {
      taskQueue: service.taskQueue,
      workflowId: `self-check-test-${Date.now()}`,
      workflowExecutionTimeout: '20 seconds',
    });
    expect(result.organizations).toBeGreaterThanOrEqual(2);
  });

  it('has the search attributes of CONVENTIONS.md registered on the server', async () => {
    const { connection } = await connectTemporal(inject('temporalAddress'), 'default');
    try {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
      expect(Object.keys(customAttributes ?? {})).toEqual(expect.arrayContaining(searchAttributeKeys.map((key) => key.name)));
      expect(searchAttributeKeys.map((key) => key.name)).toEqual([
        'OrgId',
        'ConnectionId',
        'EventType',
        'DeliveryStatus',
        'ScenarioId',
        'ClaimIdentifier',
        'PriorAuthDecision',
      ]);
    } finally {
      await connection.close();
    }
  });
});
