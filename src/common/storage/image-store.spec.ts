import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '../../config/config';
import { ImageStore } from './image-store';

describe('ImageStore', () => {
  let dir: string;
  let store: ImageStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vigil-images-'));
    store = new ImageStore({ dataDir: dir } as AppConfig);
    await store.onModuleInit(); // as Nest does at start
  });

  it('makes the shard folders at start', async () => {
    expect(readdirSync(join(dir, 'images'))).toHaveLength(256);
    const name = await store.save(Buffer.from('x'));
    expect(readFileSync(store.path(name)).toString()).toBe('x');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stores the same picture under a second name as a link: removing one keeps the other, bytes count once', async () => {
    const picture = Buffer.from('a picture shared by two events');
    const first = await store.save(picture);
    const second = await store.save(picture);
    expect(second).not.toBe(first);
    expect(statSync(store.path(second)).nlink).toBe(2);
    expect(await store.totalBytes()).toBe(picture.length);
    await store.remove([first]);
    expect(readFileSync(store.path(second))).toEqual(picture);
    expect(await store.totalBytes()).toBe(picture.length);
  });

  it('writes a new file when the first one is gone, and for equal bytes in another buffer', async () => {
    const picture = Buffer.from('picture');
    const first = await store.save(picture);
    await store.remove([first]);
    const again = await store.save(picture);
    expect(readFileSync(store.path(again))).toEqual(picture);
    const copy = await store.save(Buffer.from('picture'));
    expect(statSync(store.path(copy)).nlink).toBe(1);
    expect(await store.totalBytes()).toBe(2 * picture.length);
  });

  it('makes a shard folder again when it was removed by hand', async () => {
    const name = await store.save(Buffer.from('x'));
    rmSync(join(dir, 'images', name.slice(0, 2)), { recursive: true });
    // Same shard on purpose is not guaranteed; save until one lands in the removed folder's shard.
    for (let i = 0; i < 2000; i++) {
      const next = await store.save(Buffer.from(`y${i}`));
      if (next.slice(0, 2) === name.slice(0, 2)) {
        expect(readFileSync(store.path(next)).toString()).toBe(`y${i}`);
        return;
      }
    }
    throw new Error('no image landed in the removed shard');
  });
});
