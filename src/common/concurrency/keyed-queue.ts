/**
 * Runs the tasks of one key one after another, in the order they were queued (tasks of different keys run
 * concurrently). A task that fails is reported to `onError` and does not stop the ones after it; the promise
 * `run` returns never rejects.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly onError: (key: string, error: Error) => void) {}

  run(key: string, task: () => Promise<void>): Promise<void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(task).catch((error: Error) => this.onError(key, error));
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves when the key's tasks queued so far are done. */
  async settled(key: string): Promise<void> {
    await this.tails.get(key);
  }

  /** Resolves when every task queued so far is done. */
  async allSettled(): Promise<void> {
    await Promise.all([...this.tails.values()]);
  }
}
