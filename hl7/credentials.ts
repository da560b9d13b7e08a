import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { connections, hl7Identities, organizations } from '../drizzle/schema';
import type { CostBudget } from '../platform/cost-budget';
import type { Database } from '../platform/database';
import { hashApiKey } from '../platform/secrets';
import type { Hl7ConformanceMode } from './vocabulary';

/**
 * The MLLP credential: a token per HL7 identity (per connection), which the sender puts in MSH-8
 * (Security, "used in implementing security features"). Every interface engine can set a header
 * field per destination, which is not true of TLS client certificates, and one listener port
 * serves every partner, which is not true of a port per connection. The token is 22 random bytes
 * (176 bits) so that, with its prefix, it fits MSH-8's 40 characters; only its SHA-256 is stored.
 */
export const MLLP_TOKEN_PREFIX = 'sbx_mllp_';

export function generateMllpToken(): string {
  return MLLP_TOKEN_PREFIX + randomBytes(22).toString('base64url');
}

/** Tokens carry 176 bits of entropy: a fast unsalted hash is enough and lets the lookup use a unique index. */
export const hashMllpToken = hashApiKey;

/** What the API shows of a token after the answer that issued it. */
export function mllpTokenHint(token: string): string {
  return `${MLLP_TOKEN_PREFIX}…${token.slice(-4)}`;
}

/** The connection an MLLP token belongs to, with its HL7 identity. */
export interface MllpSender {
  organizationId: string;
  connectionId: string;
  environment: string;
  receivingApplication: string;
  receivingFacility: string;
  /** How the identity asks its messages to be checked. */
  conformance: Hl7ConformanceMode;
  /** Whether its organization refuses real identifiers rather than masking them (hl7/privacy.ts). */
  refuseRealIdentifiers: boolean;
}

/** The identity whose token this is, or undefined (no such token, or not a token at all: nothing is queried). */
export async function authenticateMllpToken(db: Database, token: string): Promise<MllpSender | undefined> {
  if (!token.startsWith(MLLP_TOKEN_PREFIX) || token.length > 64) return undefined;
  const [row] = await db
    .select({
      organizationId: hl7Identities.organizationId,
      connectionId: hl7Identities.connectionId,
      environment: connections.environment,
      receivingApplication: hl7Identities.receivingApplication,
      receivingFacility: hl7Identities.receivingFacility,
      conformance: hl7Identities.conformance,
      refuseRealIdentifiers: organizations.refuseRealIdentifiers,
    })
    .from(hl7Identities)
    .innerJoin(connections, eq(connections.id, hl7Identities.connectionId))
    .innerJoin(organizations, eq(organizations.id, hl7Identities.organizationId))
    .where(eq(hl7Identities.mllpTokenHash, hashMllpToken(token)));
  return row;
}

/** How long a token found unknown is remembered: a flood of one made-up token costs one lookup in that time. */
const UNKNOWN_TOKEN_MEMORY_MS = 10_000;
/** Unknown tokens remembered at most (the oldest are forgotten first); past this, the failure budget bounds the lookups. */
const MAX_UNKNOWN_TOKENS = 10_000;
/** Tokens a connection has authenticated with, remembered at most per connection. */
const MAX_TOKENS_PER_CONNECTION = 16;

export type MllpAuthentication = { sender: MllpSender } | { refused: 'unknown_token' } | { refused: 'failure_budget'; retryAfterSeconds: number };

/** The peer of one connection (hl7/mllp.ts MllpPeer: one object per connection). */
export interface MllpConnection {
  remoteAddress: string | undefined;
}

/**
 * Authenticates MLLP messages at a bounded cost to the database the API shares. A token is looked up
 * at most once per frame (a batch of messages with one token costs one lookup), an unknown token is
 * remembered briefly for every connection, and every message whose token fails spends one unit of its
 * address's failed-authentication budget (the one HTTP spends). With none left, a token not yet known
 * is refused before any lookup; a token this connection authenticated with before is still looked up,
 * so a partner's established connection keeps working while another client behind its address fails.
 * Valid tokens are never remembered across frames: a rotated token or a changed identity counts at once.
 */
export function createMllpAuthenticator(options: {
  lookUp(token: string): Promise<MllpSender | undefined>;
  failures: CostBudget;
  now?: () => number;
}) {
  const now = options.now ?? Date.now;
  const unknownUntil = new Map<string, number>();
  const authenticatedBy = new WeakMap<MllpConnection, Set<string>>();

  const rememberUnknown = (token: string) => {
    unknownUntil.delete(token);
    unknownUntil.set(token, now() + UNKNOWN_TOKEN_MEMORY_MS);
    if (unknownUntil.size > MAX_UNKNOWN_TOKENS) unknownUntil.delete(unknownUntil.keys().next().value!);
  };
  const knownUnknown = (token: string) => {
    const until = unknownUntil.get(token);
    if (until === undefined) return false;
    if (until > now()) return true;
    unknownUntil.delete(token);
    return false;
  };

  /** The authentication of one frame's messages: `authenticate(token)` for each, lookups shared within the frame. */
  function forFrame(connection: MllpConnection) {
    const address = connection.remoteAddress ?? 'unknown';
    const lookups = new Map<string, Promise<MllpSender | undefined>>();
    const failed = (): MllpAuthentication => {
      options.failures.spend(address, 1);
      return { refused: 'unknown_token' };
    };
    return async function authenticate(token: string): Promise<MllpAuthentication> {
      let lookup = lookups.get(token);
      if (!lookup) {
        if (!token.startsWith(MLLP_TOKEN_PREFIX) || token.length > 64 || knownUnknown(token)) return failed();
        const exhausted = options.failures.exhausted(address);
        if (exhausted.exhausted && !authenticatedBy.get(connection)?.has(token)) {
          return { refused: 'failure_budget', retryAfterSeconds: exhausted.retryAfterSeconds };
        }
        lookup = options.lookUp(token);
        lookups.set(token, lookup);
      }
      const sender = await lookup;
      if (!sender) {
        rememberUnknown(token);
        return failed();
      }
      const tokens = authenticatedBy.get(connection) ?? new Set<string>();
      if (tokens.size < MAX_TOKENS_PER_CONNECTION) tokens.add(token);
      authenticatedBy.set(connection, tokens);
      return { sender };
    };
  }

  return { forFrame };
}
