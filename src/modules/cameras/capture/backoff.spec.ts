import { BACKOFF_MAX_MS, backoffDelay } from './backoff';

describe('backoffDelay', () => {
  const middle = () => 0.5; // no jitter

  it('starts at 1 s and doubles up to 60 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => backoffDelay(n, middle))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
  });

  it('adds at most 20 % jitter either way and never exceeds the cap', () => {
    expect(backoffDelay(3, () => 0)).toBe(3_200);
    expect(backoffDelay(3, () => 0.999_999)).toBe(4_800);
    expect(backoffDelay(30, () => 0.999_999)).toBe(BACKOFF_MAX_MS);
    expect(backoffDelay(30, () => 0)).toBe(48_000);
  });
});
