import { EventEmitter } from 'node:events';
import express, { type Express, type Request } from 'express';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { verifyServiceSignature } from '../webhooks/signing';
import { RELAY_PAGE } from './page';

export interface RelayReceiverOptions {
  /** The signing secrets deliveries may use (organization default and connection overrides). */
  secrets: () => Promise<string[]>;
  /** Forward each verified delivery here, as `stripe listen --forward-to` does. */
  forwardUrl?: string | undefined;
  logger: Logger;
  /** How many recent deliveries to keep for the page and /deliveries. */
  capacity?: number;
}

export interface RelayRecord {
  delivery_id: string;
  event: string | null;
  received_at: string;
  /** Whole seconds between the attempt's webhook-timestamp and arrival (±1 s: the timestamp has 1 s resolution); a slow chaos attempt shows here. */
  lag_seconds: number | null;
  verified: boolean;
  duplicate: boolean;
  answered: number;
  forwarded: { url: string; status: number | null; error: string | null } | null;
  envelope: unknown;
}

const DEDUPE_WINDOW = 100_000;

const FORWARDED_HEADERS = [
  'content-type',
  'user-agent',
  'x-service-delivery-id',
  'x-service-signature',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
];

/**
 * The demo relay receiver (port 3004): verifies both signatures, deduplicates on
 * X-Service-Delivery-Id, keeps recent deliveries for a live page and JSON, and can forward each
 * verified delivery to a developer's local URL.
 */
export function createRelayReceiver(options: RelayReceiverOptions): Express {
  const capacity = options.capacity ?? 200;
  const records: RelayRecord[] = [];
  // Ids already handled successfully; a delivery whose forward failed is accepted again on retry.
  // Bounded (oldest forgotten first) so a relay left running for days does not grow without end.
  const handled = new Set<string>();
  const updates = new EventEmitter();
  updates.setMaxListeners(100);

  const keep = (record: RelayRecord) => {
    records.unshift(record);
    records.length = Math.min(records.length, capacity);
    updates.emit('record', record);
  };

  const app = express();
  app.disable('x-powered-by');

  app.post('/webhooks', express.raw({ type: '*/*', limit: '2mb' }), async (req, res) => {
    const body: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const deliveryId = req.header('x-service-delivery-id') ?? '';
    const secrets = await options.secrets();
    const problem = signatureProblem(req, body, secrets);
    const base = {
      delivery_id: deliveryId,
      event: eventName(body),
      received_at: new Date().toISOString(),
      lag_seconds: lagSeconds(req.header('webhook-timestamp')),
      envelope: parseJson(body),
    };
    if (problem) {
      options.logger.warn({ deliveryId, problem }, 'Relay receiver refused a delivery');
      keep({ ...base, verified: false, duplicate: false, answered: 401, forwarded: null });
      res.status(401).json({ error: problem });
      return;
    }
    if (handled.has(deliveryId)) {
      keep({ ...base, verified: true, duplicate: true, answered: 200, forwarded: null });
      res.status(200).json({ status: 'duplicate', delivery_id: deliveryId });
      return;
    }
    const forwarded = options.forwardUrl ? await forward(options.forwardUrl, req, body) : null;
    const answered =
      forwarded === null ? 200 : forwarded.status === null ? 502 : forwarded.status >= 200 && forwarded.status < 300 ? 200 : forwarded.status;
    if (answered === 200) {
      handled.add(deliveryId);
      if (handled.size > DEDUPE_WINDOW) handled.delete(handled.values().next().value!);
    }
    keep({ ...base, verified: true, duplicate: false, answered, forwarded });
    res.status(answered).json({ status: answered === 200 ? 'received' : 'forward_failed', delivery_id: deliveryId });
  });

  app.get('/deliveries', (_req, res) => {
    res.json({ data: records });
  });

  // Server-sent events: the page appends each delivery as it arrives.
  app.get('/deliveries/stream', (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive' });
    res.write(': connected\n\n');
    const send = (record: RelayRecord) => res.write(`data: ${JSON.stringify(record)}\n\n`);
    updates.on('record', send);
    req.on('close', () => updates.off('record', send));
  });

  app.get('/', (_req, res) => {
    res.type('html').send(RELAY_PAGE);
  });
  return app;
}

/** Why the request is not a genuine delivery, or null. Both signatures must hold. */
function signatureProblem(req: Request, body: Buffer, secrets: string[]): string | null {
  if (!req.header('x-service-delivery-id')) return 'missing X-Service-Delivery-Id';
  if (!verifyServiceSignature(body, req.header('x-service-signature'), secrets)) return 'X-Service-Signature does not match the body';
  const headers = {
    'webhook-id': req.header('webhook-id') ?? '',
    'webhook-timestamp': req.header('webhook-timestamp') ?? '',
    'webhook-signature': req.header('webhook-signature') ?? '',
  };
  const standardValid = secrets.some((secret) => {
    try {
      new Webhook(secret, { format: 'raw' }).verify(body, headers);
      return true;
    } catch {
      return false;
    }
  });
  if (!standardValid) return 'webhook-signature (Standard Webhooks) does not verify, or webhook-timestamp is too old';
  if (headers['webhook-id'] !== req.header('x-service-delivery-id')) return 'webhook-id and X-Service-Delivery-Id differ';
  return null;
}

async function forward(url: string, req: Request, body: Buffer): Promise<NonNullable<RelayRecord['forwarded']>> {
  const headers = Object.fromEntries(FORWARDED_HEADERS.flatMap((name) => (req.header(name) ? [[name, req.header(name)!]] : [])));
  try {
    const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return { url, status: response.status, error: null };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return { url, status: null, error: cause?.code ?? (error as Error).message };
  }
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
}

function eventName(body: Buffer): string | null {
  const envelope = parseJson(body) as { event?: unknown } | null;
  return typeof envelope?.event === 'string' ? envelope.event : null;
}

function lagSeconds(timestamp: string | undefined): number | null {
  const sent = Number(timestamp);
  return Number.isFinite(sent) && sent > 0 ? Math.max(0, Math.floor(Date.now() / 1000) - sent) : null;
}
