import { DEFAULT_QUEUE_TIMING, LEASE_MARGIN_MS, leaseMs, retryDelayMs } from './queue-timing';

describe('retryDelayMs and leaseMs', () => {
  it('waits 1 minute, doubling up to an hour', () => {
    const minutes = [1, 2, 3, 4, 5, 6, 7, 8, 50].map((a) => retryDelayMs(a, DEFAULT_QUEUE_TIMING) / 60_000);
    expect(minutes).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
    expect(retryDelayMs(0, DEFAULT_QUEUE_TIMING)).toBe(60_000);
  });

  it('leases for every timeout of the chain plus a margin', () => {
    expect(leaseMs([30_000, 20_000])).toBe(50_000 + LEASE_MARGIN_MS);
    expect(leaseMs([])).toBe(LEASE_MARGIN_MS);
  });
});
