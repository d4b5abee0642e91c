import { capPeriods, checkCaps } from './cost-caps';

const NOW = new Date('2026-12-31T22:30:00Z');

describe('capPeriods', () => {
  it('gives the UTC day and month, across a year end', () => {
    expect(capPeriods(NOW)).toEqual({
      dayStart: new Date('2026-12-31T00:00:00Z'),
      nextDay: new Date('2027-01-01T00:00:00Z'),
      monthStart: new Date('2026-12-01T00:00:00Z'),
      nextMonth: new Date('2027-01-01T00:00:00Z'),
    });
    expect(capPeriods(new Date('2026-02-28T00:00:00Z')).nextDay).toEqual(new Date('2026-03-01T00:00:00Z'));
  });
});

describe('checkCaps', () => {
  it('is not paused below the caps or without caps', () => {
    expect(checkCaps({ today: 0.99, month: 9.99 }, { daily: 1, monthly: 10 }, NOW)).toEqual({
      paused: false,
    });
    expect(checkCaps({ today: 500, month: 500 }, { daily: null, monthly: null }, NOW)).toEqual({
      paused: false,
    });
  });

  it('pauses at the daily cap until the next UTC day', () => {
    const check = checkCaps({ today: 1, month: 5 }, { daily: 1, monthly: 10 }, NOW);
    expect(check).toMatchObject({ paused: true, cap: 'daily', spentUsd: 1, capUsd: 1 });
    expect(check.paused && check.until).toEqual(new Date('2027-01-01T00:00:00Z'));
    expect(check.paused && check.detail).toBe(
      'AI is paused: $1.00 spent today (UTC) reached the daily cost cap of $1.00; it resumes at ' +
        '2027-01-01T00:00:00.000Z or when the cap is raised',
    );
  });

  it('prefers the monthly cap when both are reached, and a cap of 0 pauses at once', () => {
    expect(
      checkCaps({ today: 3, month: 12 }, { daily: 2, monthly: 12 }, new Date('2026-11-05T10:00:00Z')),
    ).toMatchObject({ paused: true, cap: 'monthly', until: new Date('2026-12-01T00:00:00Z') });
    expect(checkCaps({ today: 0, month: 0 }, { daily: 0, monthly: null }, NOW)).toMatchObject({
      paused: true,
      cap: 'daily',
    });
  });
});
