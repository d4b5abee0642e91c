import type { ChildProcess } from 'node:child_process';

/** Anything a test started that must be gone when the test file ends. */
export interface StoppableFake {
  stop(): Promise<void>;
}

const running = new Set<StoppableFake>();

export function trackFake(fake: StoppableFake): void {
  running.add(fake);
}

export function untrackFake(fake: StoppableFake): void {
  running.delete(fake);
}

/**
 * Stops every fake camera and fake server this test process started and has not stopped yet. Call it in
 * `afterAll` so that a failing test cannot leave a camera (and its python or ffmpeg child) running.
 */
export async function stopAllFakeCameras(): Promise<void> {
  await Promise.allSettled([...running].map((fake) => fake.stop()));
}

/** Resolves when the child has exited (at once if it already has). */
export function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** SIGTERM, then SIGKILL if the child is still there after `graceMs`; resolves once it has exited. */
export async function terminateChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  const exited = waitForExit(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Keeps the last `limit` characters of a child's stderr for error messages. */
export function stderrTail(previous: string, chunk: Buffer | string, limit = 8192): string {
  const text = previous + chunk.toString();
  return text.length > limit ? text.slice(text.length - limit) : text;
}
