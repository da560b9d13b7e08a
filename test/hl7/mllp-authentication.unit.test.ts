import { describe, expect, it } from 'vitest';
import { createMllpAuthenticator, type MllpSender } from '../../hl7/credentials';
import { createCostBudget } from '../../platform/cost-budget';

/** The MLLP authenticator's cost to the database: lookups counted by a stand-in for the token query. */

const sender: MllpSender = {
  organizationId: 'org_synthetic',
  connectionId: 'con_synthetic',
  environment: 'sandbox',
  receivingApplication: 'EHR',
  receivingFacility: 'MLLP',
  conformance: 'lenient',
  refuseRealIdentifiers: false,
};
const VALID = 'sbx_mllp_valid-token-of-a-synthetic-connection';
const madeUp = (n: number) => `sbx_mllp_made-up-${n}`;

function setUp(failuresPerMinute = 300) {
  let now = 0;
  const lookedUp: string[] = [];
  const authenticator = createMllpAuthenticator({
    lookUp: async (token) => {
      lookedUp.push(token);
      return token === VALID ? sender : undefined;
    },
    failures: createCostBudget(failuresPerMinute, () => now),
    now: () => now,
  });
  return { authenticator, lookedUp, advance: (ms: number) => (now += ms) };
}

describe('MLLP authentication at a bounded cost', () => {
  it('looks a frame’s token up once however many messages carry it, and remembers an unknown token for every connection', async () => {
    const { authenticator, lookedUp, advance } = setUp();
    const connection = { remoteAddress: '192.0.2.10' };
    const frame = authenticator.forFrame(connection);
    const answers = await Promise.all(Array.from({ length: 9_000 }, () => frame(madeUp(1))));
    expect(answers.every((answer) => 'refused' in answer && answer.refused === 'unknown_token')).toBe(true);
    expect(lookedUp).toEqual([madeUp(1)]);
    // The next frame, on this connection or another, finds it remembered.
    expect(await authenticator.forFrame(connection)(madeUp(1))).toEqual({ refused: 'unknown_token' });
    expect(await authenticator.forFrame({ remoteAddress: '192.0.2.11' })(madeUp(1))).toEqual({ refused: 'unknown_token' });
    expect(lookedUp).toHaveLength(1);
    // Briefly: a token issued since is found.
    advance(11_000);
    await authenticator.forFrame(connection)(madeUp(1));
    expect(lookedUp).toHaveLength(2);
    // A valid token is looked up once a frame, never remembered across frames (a rotation counts at once).
    const valid = authenticator.forFrame(connection);
    expect(await Promise.all([valid(VALID), valid(VALID)])).toEqual([{ sender }, { sender }]);
    await authenticator.forFrame(connection)(VALID);
    expect(lookedUp.filter((token) => token === VALID)).toHaveLength(2);
  });

  it('spends the address’s failure budget for each failed message, and past it refuses new tokens before any lookup', async () => {
    const { authenticator, lookedUp } = setUp(5);
    const established = { remoteAddress: '192.0.2.20' };
    expect(await authenticator.forFrame(established)(VALID)).toEqual({ sender });
    const attacker = { remoteAddress: '192.0.2.20' };
    const frame = authenticator.forFrame(attacker);
    for (let n = 0; n < 5; n += 1) expect(await frame(madeUp(n))).toEqual({ refused: 'unknown_token' });
    const lookupsBefore = lookedUp.length;
    const refused = await authenticator.forFrame(attacker)(madeUp(99));
    expect(refused).toMatchObject({ refused: 'failure_budget', retryAfterSeconds: expect.any(Number) });
    // A new connection from the address with a token it never authenticated with waits too, unlooked-up…
    expect(await authenticator.forFrame({ remoteAddress: '192.0.2.20' })(VALID)).toMatchObject({ refused: 'failure_budget' });
    expect(lookedUp).toHaveLength(lookupsBefore);
    // …while the connection that authenticated with it before keeps being served, and another address is untouched.
    expect(await authenticator.forFrame(established)(VALID)).toEqual({ sender });
    expect(await authenticator.forFrame({ remoteAddress: '192.0.2.30' })(VALID)).toEqual({ sender });
  });
});
