import { z } from 'zod';
import type { Organization } from '../../drizzle/schema';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { findOrganization, updateWebhookSettings } from '../../platform/organizations';
import { maskSecret } from '../../platform/secrets';
import type { ResolveHost } from '../../webhooks/targets';
import { defineRoute } from '../http/route';
import { assertDeliverableUrl, rotateSecretField, webhookUrlField } from './target-fields';

const webhookSettingsSchema = z
  .object({
    webhook_url: z.string().nullable().meta({ description: 'Default receiver for every connection without its own URL' }),
    webhook_secret: z.string().meta({ description: 'Signing secret; masked except in the response that created or rotated it' }),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookSettings' });

const updateWebhookSettingsSchema = z
  .object({ webhook_url: webhookUrlField.optional(), rotate_secret: rotateSecretField.optional() })
  .strict()
  .meta({ id: 'UpdateWebhookSettings' });

function present(organization: Organization, revealSecret: boolean): z.input<typeof webhookSettingsSchema> {
  return {
    webhook_url: organization.webhookUrl,
    webhook_secret: revealSecret ? organization.webhookSecret : maskSecret(organization.webhookSecret),
    updated_at: organization.updatedAt.toISOString(),
  };
}

/** The organization default webhook target (the spec's "dashboard Settings" tier). */
export function settingsRoutes({ db, config, resolveHost }: { db: Database; config: Config; resolveHost?: ResolveHost }) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/settings/webhook',
      operationId: 'getWebhookSettings',
      summary: 'Read the organization default webhook URL and (masked) signing secret',
      tag: 'Settings',
      auth: 'api_key',
      success: { status: 200, description: 'The organization webhook settings', schema: webhookSettingsSchema },
      handler: async ({ auth }) => {
        return present((await findOrganization(db, auth.organizationId))!, false);
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/settings/webhook',
      operationId: 'updateWebhookSettings',
      summary: 'Set the default webhook URL or rotate the signing secret',
      description: 'With `rotate_secret: true` the new secret is answered in full, once; afterwards it is masked.',
      tag: 'Settings',
      auth: 'api_key',
      body: updateWebhookSettingsSchema,
      success: { status: 200, description: 'The updated settings', schema: webhookSettingsSchema },
      errors: [415, 422],
      handler: async ({ auth, body }) => {
        await assertDeliverableUrl(body.webhook_url, config, resolveHost);
        const organization = await updateWebhookSettings(db, auth.organizationId, { webhookUrl: body.webhook_url, rotateSecret: body.rotate_secret });
        return present(organization, body.rotate_secret === true);
      },
    }),
  ];
}
