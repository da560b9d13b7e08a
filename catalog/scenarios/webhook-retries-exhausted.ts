import { DEFAULT_RETRY_SCHEDULE_MS } from '../../platform/retry-schedule';
import { defineScenario } from './definition';

export const webhookRetriesExhausted = defineScenario({
  id: 'webhook_retries_exhausted',
  name: 'Webhook retries exhausted',
  description: 'Your receiver fails every attempt: the delivery is retried after 30 s, 2 min, 10 min and 30 min, then reported as exhausted.',
  steps: [
    {
      id: 'event_emitted',
      description: 'An admission event is sent and your receiver fails it.',
      emits: ['adt.patient.admitted'],
      typicalDelaySeconds: 0,
    },
    {
      id: 'retries_failed',
      description: 'Four retries on the backoff schedule fail too.',
      emits: [],
      typicalDelaySeconds: DEFAULT_RETRY_SCHEDULE_MS.reduce((total, delayMs) => total + delayMs, 0) / 1000,
    },
    {
      id: 'exhausted',
      description: 'The sandbox reports the delivery as exhausted.',
      emits: ['webhook.delivery.exhausted'],
      typicalDelaySeconds: 1,
    },
  ],
  plan: { kind: 'plain', service: null },
  story: { setting: 'ward', diagnosis: 'pneumonia', order: null, result: null },
});
