import { createHmac, timingSafeEqual } from 'node:crypto';
import { VERSION } from '../platform/version';

/**
 * The signature contract of CONVENTIONS.md. Both HMACs are keyed with the secret string's UTF-8 bytes:
 * - `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>` (the spec's header);
 * - Standard Webhooks `webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`,
 *   so receivers using a Standard Webhooks library (raw secret) verify with replay protection.
 */
export function signEnvelope(input: {
  deliveryId: string;
  body: string;
  secret: string;
  timestampSeconds: number;
  /** A FHIR Subscription's payload MIME type (`application/fhir+json`); JSON otherwise. */
  contentType?: string;
  /** A FHIR Subscription's `channel.header` values (`Name: value`), sent first: the sender's own headers follow and win. */
  channelHeaders?: readonly string[];
}): Record<string, string> {
  const { deliveryId, body, secret, timestampSeconds } = input;
  const channel = Object.fromEntries(
    (input.channelHeaders ?? []).map((header) => {
      const colon = header.indexOf(':');
      return [header.slice(0, colon), header.slice(colon + 1).trim()];
    }),
  );
  const serviceSignature = createHmac('sha256', secret).update(body, 'utf8').digest('hex');
  const standardSignature = createHmac('sha256', secret).update(`${deliveryId}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return {
    ...channel,
    'Content-Type': input.contentType ?? 'application/json',
    'User-Agent': `SyntheticHealthcareSandbox-Webhooks/${VERSION}`,
    'X-Service-Delivery-Id': deliveryId,
    'X-Service-Signature': `sha256=${serviceSignature}`,
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${standardSignature}`,
  };
}

/** Timing-safe check of `X-Service-Signature` against any of the given secrets. */
export function verifyServiceSignature(rawBody: Buffer, header: string | undefined, secrets: readonly string[]): boolean {
  const match = /^sha256=([0-9a-f]{64})$/.exec(header ?? '');
  if (!match) return false;
  const received = Buffer.from(match[1]!, 'hex');
  return secrets.some((secret) => timingSafeEqual(createHmac('sha256', secret).update(rawBody).digest(), received));
}
