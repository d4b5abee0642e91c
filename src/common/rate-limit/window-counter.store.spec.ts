import { MemoryWindowCounterStore } from './window-counter.store';

describe('MemoryWindowCounterStore (fixed windows)', () => {
  it('counts hits in a window that the first hit opens, and does not move its end', () => {
    const store = new MemoryWindowCounterStore();
    const first = store.hitSync('k', 60_000, 1_000);
    expect(first).toEqual({ count: 1, resetAt: 61_000 });
    expect(store.hitSync('k', 60_000, 30_000)).toEqual({ count: 2, resetAt: 61_000 });
    expect(store.hitSync('k', 60_000, 60_999)).toEqual({ count: 3, resetAt: 61_000 });
  });

  it('starts from zero once the window has ended', () => {
    const store = new MemoryWindowCounterStore();
    store.hitSync('k', 60_000, 0);
    store.hitSync('k', 60_000, 10);
    expect(store.hitSync('k', 60_000, 60_000)).toEqual({ count: 1, resetAt: 120_000 });
  });

  it('keeps keys apart and forgets a key on reset', async () => {
    const store = new MemoryWindowCounterStore();
    store.hitSync('a', 60_000, Date.now());
    store.hitSync('a', 60_000, Date.now());
    store.hitSync('b', 60_000, Date.now());
    expect((await store.peek('a'))?.count).toBe(2);
    expect((await store.peek('b'))?.count).toBe(1);
    await store.reset('a');
    expect(await store.peek('a')).toBeNull();
  });
});
