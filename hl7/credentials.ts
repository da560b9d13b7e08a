import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { connections, hl7Identities, organizations } from '../drizzle/schema';
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
