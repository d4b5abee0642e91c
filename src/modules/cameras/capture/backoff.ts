/**
 * Reconnect delays: 1 s doubling to 60 s, each with up to ±20 % jitter so cameras that dropped together
 * (a switch reboot) do not reconnect in lockstep.
 */
export const BACKOFF_INITIAL_MS = 1_000;
export const BACKOFF_MAX_MS = 60_000;
export const BACKOFF_JITTER = 0.2;

/** The delay before retry number `failures` (1 = after the first failure). `random` is in [0, 1). */
export function backoffDelay(failures: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.min(failures - 1, 16));
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS * 2 ** exponent);
  const jitter = base * BACKOFF_JITTER * (2 * random() - 1);
  return Math.round(Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_INITIAL_MS / 2, base + jitter)));
}
