import { hash, randomBytes } from 'node:crypto';

/** API keys: `sk_sandbox_` + 32 random bytes (base64url). Only their SHA-256 is stored. */
export const API_KEY_PREFIX = 'sk_sandbox_';
export const API_KEY_PATTERN = /^sk_sandbox_[A-Za-z0-9_-]{32,}$/;

/** Webhook signing secrets: `sbx_whsec_` + 32 random bytes (base64url), per CONVENTIONS.md. */
export const WEBHOOK_SECRET_PREFIX = 'sbx_whsec_';

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Keys carry 256 bits of entropy, so a fast unsalted hash is enough to make a stolen table useless
 * and lets the lookup use a unique index. Hashed on every API request: the one-shot `hash` spares
 * the Hash object createHash makes.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** What `keys list` shows so an operator can recognise a key without it being recoverable. */
export function apiKeyHint(key: string): string {
  return `${key.slice(0, API_KEY_PREFIX.length + 4)}…${key.slice(-4)}`;
}

export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** Secrets are shown in full only when created or rotated; everywhere else like this. */
export function maskSecret(secret: string): string {
  return `${WEBHOOK_SECRET_PREFIX}…${secret.slice(-4)}`;
}
