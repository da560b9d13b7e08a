import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { connections, hl7Identities } from '../drizzle/schema';
import type { Database } from '../platform/database';
import { hashApiKey } from '../platform/secrets';
import type { Hl7ConformanceMode } from './vocabulary';

/**
 * The one module that writes `hl7_identities`: each connection's HL7 identity (the receiving
 * application and facility its messages name) and its MLLP credential.
 *
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
    })
    .from(hl7Identities)
    .innerJoin(connections, eq(connections.id, hl7Identities.connectionId))
    .where(eq(hl7Identities.mllpTokenHash, hashMllpToken(token)));
  return row;
}

/** The connection's HL7 identity, or undefined when it has none (or is another organization's). */
export async function findIdentity(
  db: Database,
  organizationId: string,
  connectionId: string,
): Promise<typeof hl7Identities.$inferSelect | undefined> {
  const [identity] = await db
    .select()
    .from(hl7Identities)
    .where(and(eq(hl7Identities.organizationId, organizationId), eq(hl7Identities.connectionId, connectionId)));
  return identity;
}

/** Sets the connection's identity; with a token, it becomes the identity's MLLP credential (only its hash and hint are kept). */
export async function saveIdentity(
  db: Database,
  identity: {
    organizationId: string;
    connectionId: string;
    receivingApplication: string;
    receivingFacility: string;
    conformance: Hl7ConformanceMode;
    token?: string | undefined;
  },
): Promise<void> {
  const { organizationId, connectionId, token, ...named } = identity;
  const values = { ...named, updatedAt: new Date(), ...(token ? { mllpTokenHash: hashMllpToken(token), mllpTokenHint: mllpTokenHint(token) } : {}) };
  await db
    .insert(hl7Identities)
    .values({ connectionId, organizationId, ...values })
    .onConflictDoUpdate({ target: hl7Identities.connectionId, set: values });
}

/** The connection of this organization whose HL7 identity is this receiving application and facility: who its messages are delivered for. */
export async function findRecipientByIdentity(
  db: Database,
  organizationId: string,
  application: string,
  facility: string,
): Promise<Pick<MllpSender, 'organizationId' | 'connectionId' | 'environment' | 'conformance'> | undefined> {
  const [row] = await db
    .select({
      organizationId: hl7Identities.organizationId,
      connectionId: hl7Identities.connectionId,
      environment: connections.environment,
      conformance: hl7Identities.conformance,
    })
    .from(hl7Identities)
    .innerJoin(connections, eq(connections.id, hl7Identities.connectionId))
    .where(
      and(
        eq(hl7Identities.organizationId, organizationId),
        eq(hl7Identities.receivingApplication, application),
        eq(hl7Identities.receivingFacility, facility),
      ),
    );
  return row;
}
