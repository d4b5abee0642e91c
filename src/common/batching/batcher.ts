/**
 * Group work that arrives at the same moment into one call: items added while a batch runs (or in the same
 * tick) go together in the next one, at most `maxBatch` at a time, one batch at a time. A batch that fails is
 * retried item by item, so one bad item fails alone.
 */
export class Batcher<I, O> {
  private readonly queue: { item: I; resolve: (result: O) => void; reject: (error: unknown) => void }[] = [];
  private running = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.running) return;
      this.running = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.run(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => entry.resolve(results[i]));
      } catch (error) {
        if (batch.length === 1) {
          batch[0].reject(error);
          continue;
        }
        for (const entry of batch) {
          try {
            entry.resolve((await this.run([entry.item]))[0]);
          } catch (itemError) {
            entry.reject(itemError);
          }
        }
      }
    }
    this.running = false;
  }
}
