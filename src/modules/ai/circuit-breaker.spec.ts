import { CIRCUIT_FAILURE_THRESHOLD, CIRCUIT_OPEN_MS, CircuitBreaker } from './circuit-breaker';

describe('CircuitBreaker', () => {
  let clock: number;
  let breaker: CircuitBreaker;
  beforeEach(() => {
    clock = 1_000_000;
    breaker = new CircuitBreaker(undefined, () => clock);
  });

  const fail = (times: number) => {
    for (let i = 0; i < times; i++) {
      expect(breaker.tryAcquire()).toBe(true);
      breaker.failure();
    }
  };

  it('uses 3 failures and 30 s by default', () => {
    expect(CIRCUIT_FAILURE_THRESHOLD).toBe(3);
    expect(CIRCUIT_OPEN_MS).toBe(30_000);
  });

  it('stays closed below the threshold and a success resets the count', () => {
    fail(2);
    expect(breaker.state).toBe('closed');
    expect(breaker.failures).toBe(2);
    breaker.success();
    fail(2);
    expect(breaker.state).toBe('closed');
    expect(breaker.tryAcquire()).toBe(true);
  });

  it('opens after 3 consecutive failures and refuses requests while open', () => {
    fail(3);
    expect(breaker.state).toBe('open');
    expect(breaker.available).toBe(false);
    expect(breaker.tryAcquire()).toBe(false);
    expect(breaker.retryAt).toBe(clock + CIRCUIT_OPEN_MS);
    clock += CIRCUIT_OPEN_MS - 1;
    expect(breaker.tryAcquire()).toBe(false);
  });

  it('lets exactly one probe through when half-open; its success closes the circuit', () => {
    fail(3);
    clock += CIRCUIT_OPEN_MS;
    expect(breaker.state).toBe('half_open');
    expect(breaker.available).toBe(true);
    expect(breaker.tryAcquire()).toBe(true);
    expect(breaker.available).toBe(false);
    expect(breaker.tryAcquire()).toBe(false);
    breaker.success();
    expect(breaker.state).toBe('closed');
    expect(breaker.failures).toBe(0);
    expect(breaker.tryAcquire()).toBe(true);
    expect(breaker.tryAcquire()).toBe(true);
  });

  it('re-opens for another full period when the probe fails', () => {
    fail(3);
    clock += CIRCUIT_OPEN_MS + 500;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.failure();
    expect(breaker.state).toBe('open');
    clock += CIRCUIT_OPEN_MS - 1;
    expect(breaker.tryAcquire()).toBe(false);
    clock += 1;
    expect(breaker.tryAcquire()).toBe(true);
  });

  it('hands the probe slot back on release', () => {
    fail(3);
    clock += CIRCUIT_OPEN_MS;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.release();
    expect(breaker.state).toBe('half_open');
    expect(breaker.tryAcquire()).toBe(true);
  });

  it('takes its numbers from the options', () => {
    const quick = new CircuitBreaker({ failureThreshold: 1, openMs: 10 }, () => clock);
    expect(quick.tryAcquire()).toBe(true);
    quick.failure();
    expect(quick.state).toBe('open');
    clock += 10;
    expect(quick.state).toBe('half_open');
  });
});
