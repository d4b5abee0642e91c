import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Process ids of this process's direct children running `command` (e.g. the capture's ffmpeg). The fake
 * MJPEG camera's own ffmpeg (a `-f lavfi` test source) is not counted.
 */
export function childProcessIds(command: string, parent = process.pid): number[] {
  let out: string;
  try {
    out = execFileSync('ps', ['-o', 'pid=,comm=,args=', '--ppid', String(parent)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when there is no child at all
  }
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([pid, comm, ...args]) => pid && comm === command && !args.includes('lavfi'))
    .map(([pid]) => Number(pid));
}

/** Every process on the machine running `command` (orphans included). */
export function processIds(command: string): number[] {
  try {
    return execFileSync('pgrep', ['-x', command], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** Set by the global setup in this test run's environment, which its workers, apps and fakes inherit. */
export const TEST_RUN_VARIABLE = 'VIGIL_TEST_RUN';

/**
 * ffmpeg and python (fake RTSP camera) processes started by this test run, orphans included: those whose
 * environment carries this run's marker. Processes of other runs or programs are never counted.
 */
export function mediaProcessIds(runId = process.env[TEST_RUN_VARIABLE]): number[] {
  if (!runId) return [];
  const marker = `${TEST_RUN_VARIABLE}=${runId}`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (comm !== 'ffmpeg' && !comm.startsWith('python')) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(marker))
        found.push(Number(entry));
    } catch {
      // the process ended meanwhile, or is not ours to read
    }
  }
  return found;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: Error | undefined;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error as Error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`,
      );
    await sleep(intervalMs);
  }
}
