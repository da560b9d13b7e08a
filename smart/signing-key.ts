import { eq } from 'drizzle-orm';
import { type CryptoKey, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { smartSigningKeys } from '../drizzle/schema';
import type { Database } from '../platform/database';

export const SIGNING_ALGORITHM = 'RS256';
const PURPOSE = 'smart_tokens';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

/**
 * The key that signs access and id tokens. The first process to need it generates it and stores
 * it; a process that loses that race reads the winner's, so every API process signs alike and
 * tokens stay valid across restarts.
 */
export async function loadSigningKey(db: Database): Promise<SigningKey> {
  const stored = await readStoredKey(db);
  if (stored) return stored;
  const pair = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(pair.publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  await db
    .insert(smartSigningKeys)
    .values({
      purpose: PURPOSE,
      kid,
      algorithm: SIGNING_ALGORITHM,
      privateJwk: { ...(await exportJWK(pair.privateKey)) },
      publicJwk: { ...publicJwk },
    })
    .onConflictDoNothing();
  const kept = await readStoredKey(db);
  if (!kept) throw new Error('The SMART signing key could not be stored.');
  return kept;
}

async function readStoredKey(db: Database): Promise<SigningKey | null> {
  const [row] = await db.select().from(smartSigningKeys).where(eq(smartSigningKeys.purpose, PURPOSE));
  if (!row) return null;
  const publicJwk: JWK = { ...(row.publicJwk as JWK), kid: row.kid, alg: row.algorithm, use: 'sig' };
  return {
    kid: row.kid,
    privateKey: (await importJWK(row.privateJwk as JWK, row.algorithm)) as CryptoKey,
    publicKey: (await importJWK(publicJwk, row.algorithm)) as CryptoKey,
    publicJwk,
  };
}
