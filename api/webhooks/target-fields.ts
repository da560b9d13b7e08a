import { z } from 'zod';
import type { Config } from '../../platform/config';
import { webhookUrlProblem } from '../../webhooks/targets';
import { invalidFields } from '../http/problem';

/** The request fields shared by organization settings and connections (CONVENTIONS.md, Webhooks: two-tier targets). */
export const webhookUrlField = z
  .url({ protocol: /^https?$/, message: 'webhook_url must be an absolute http or https URL' })
  .max(2048, 'webhook_url must be at most 2048 characters')
  .nullable()
  .meta({ description: 'Receiver URL (http or https); null to clear it', example: 'https://partner.example/webhooks' });

export const rotateSecretField = z.boolean().meta({ description: 'true issues a new signing secret, answered in full once in this response' });

/** Refuses a webhook URL the service must not call, with the reason in the problem body. */
export async function assertDeliverableUrl(url: string | null | undefined, config: Pick<Config, 'ALLOW_PRIVATE_TARGETS'>): Promise<void> {
  if (!url) return;
  const problem = await webhookUrlProblem(url, config.ALLOW_PRIVATE_TARGETS);
  if (problem) {
    throw invalidFields('body', [{ path: 'body.webhook_url', message: problem }], 'webhook_url_not_allowed');
  }
}
