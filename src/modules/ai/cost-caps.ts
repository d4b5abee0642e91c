/*
 * The daily and monthly cost caps (settings `ai_daily_cost_cap_usd`, `ai_monthly_cost_cap_usd`): spending is
 * the sum of `cost_usd` in the ledger since the start of the current UTC day / month. At or over a cap, AI
 * pauses until the period ends (or the cap is raised).
 */

export interface CapPeriods {
  dayStart: Date;
  monthStart: Date;
  nextDay: Date;
  nextMonth: Date;
}

/** The UTC day and month `now` falls in. */
export function capPeriods(now: Date): CapPeriods {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  return {
    dayStart: new Date(Date.UTC(y, m, d)),
    nextDay: new Date(Date.UTC(y, m, d + 1)),
    monthStart: new Date(Date.UTC(y, m, 1)),
    nextMonth: new Date(Date.UTC(y, m + 1, 1)),
  };
}

export interface Spend {
  today: number;
  month: number;
}

export interface Caps {
  daily: number | null;
  monthly: number | null;
}

export type CapCheck =
  | { paused: false }
  | { paused: true; cap: 'daily' | 'monthly'; spentUsd: number; capUsd: number; until: Date; detail: string };

const dollars = (value: number): string => `$${value.toFixed(value < 1 ? 4 : 2)}`;

/** Whether a cap is reached; when both are, the monthly one (it lasts longer). */
export function checkCaps(spend: Spend, caps: Caps, now: Date): CapCheck {
  const periods = capPeriods(now);
  if (caps.monthly !== null && spend.month >= caps.monthly) {
    return {
      paused: true,
      cap: 'monthly',
      spentUsd: spend.month,
      capUsd: caps.monthly,
      until: periods.nextMonth,
      detail:
        `AI is paused: ${dollars(spend.month)} spent this month (UTC) reached the monthly cost cap of ` +
        `${dollars(caps.monthly)}; it resumes at ${periods.nextMonth.toISOString()} or when the cap is raised`,
    };
  }
  if (caps.daily !== null && spend.today >= caps.daily) {
    return {
      paused: true,
      cap: 'daily',
      spentUsd: spend.today,
      capUsd: caps.daily,
      until: periods.nextDay,
      detail:
        `AI is paused: ${dollars(spend.today)} spent today (UTC) reached the daily cost cap of ` +
        `${dollars(caps.daily)}; it resumes at ${periods.nextDay.toISOString()} or when the cap is raised`,
    };
  }
  return { paused: false };
}
