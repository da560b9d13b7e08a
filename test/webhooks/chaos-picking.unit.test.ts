import { describe, expect, it } from 'vitest';
import { DEFAULT_RELIABILITY_PROFILE, pickChaos } from '../../webhooks/chaos';

const never = () => 1;
const always = () => 0;

describe('which chaos touches an attempt', () => {
  it('touches nothing with the default profile', () => {
    expect(pickChaos(DEFAULT_RELIABILITY_PROFILE, 1, always)).toBeNull();
  });

  it('touches exactly the first N attempts of a deterministic mode', () => {
    const profile = { ...DEFAULT_RELIABILITY_PROFILE, transient_503: { first_n_attempts: 2, rate: 0 } };
    expect([1, 2, 3].map((attempt) => pickChaos(profile, attempt, never))).toEqual([{ mode: 'transient_503' }, { mode: 'transient_503' }, null]);
  });

  it('touches any other attempt at its rate', () => {
    const profile = { ...DEFAULT_RELIABILITY_PROFILE, slow: { first_n_attempts: 0, rate: 0.5, delay_ms: 4_000 } };
    expect(pickChaos(profile, 7, () => 0.49)).toEqual({ mode: 'slow', delayMs: 4_000 });
    expect(pickChaos(profile, 7, () => 0.5)).toBeNull();
  });

  it('lets rate limit win over a transient 503, and both over slow, carrying their settings', () => {
    const profile = {
      transient_503: { first_n_attempts: 1, rate: 0 },
      slow: { first_n_attempts: 1, rate: 0, delay_ms: 3_000 },
      rate_limit: { first_n_attempts: 1, rate: 0, retry_after_seconds: 7 },
    };
    expect(pickChaos(profile, 1, never)).toEqual({ mode: 'rate_limit', retryAfterMs: 7_000 });
    expect(pickChaos({ ...profile, rate_limit: DEFAULT_RELIABILITY_PROFILE.rate_limit }, 1, never)).toEqual({ mode: 'transient_503' });
  });
});
