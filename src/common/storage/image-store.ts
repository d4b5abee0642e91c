import { Global, Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { writeFile as writeFileCallback } from 'node:fs';
import { link, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { APP_CONFIG, AppConfig } from '../../config/config';

/** The callback API: about half the main-thread cost of fs/promises' FileHandle per file (bursts of events). */
const writeFile = promisify(writeFileCallback);

const NAME = /^[0-9a-f]{2}\/[0-9a-f-]{36}\.jpg$/;

/**
 * Event images (JPEG) under DATA_DIR/images. Names are made here (`ab/<uuid>.jpg`, sharded by the first
 * two hex digits); a name that does not have that shape is never turned into a path, so no client input
 * can reach another file.
 */
@Injectable()
export class ImageStore implements OnModuleInit {
  readonly root: string;
  /** The name each picture still in memory was saved under (forgotten with the picture). */
  private readonly saved = new WeakMap<Buffer, string>();

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.root = join(config.dataDir, 'images');
  }

  /** Makes the 256 shard folders at start, so a burst of events does not pay for them. */
  async onModuleInit(): Promise<void> {
    const shards = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
    await Promise.all(shards.map((shard) => mkdir(join(this.root, shard), { recursive: true })));
  }

  async save(jpeg: Buffer): Promise<string> {
    const id = randomUUID();
    const name = `${id.slice(0, 2)}/${id}.jpg`;
    // The very same picture saved again (detections sharing one snapshot): a hard link, one cheap call
    // instead of writing the bytes again; removing either name leaves the other intact.
    const earlier = this.saved.get(jpeg);
    if (
      earlier &&
      (await link(join(this.root, earlier), join(this.root, name)).then(
        () => true,
        () => false,
      ))
    )
      return name;
    try {
      await writeFile(join(this.root, name), jpeg, { mode: 0o640 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // The folder is missing (removed by hand, or the store was not initialised): make it.
      await mkdir(join(this.root, id.slice(0, 2)), { recursive: true });
      await writeFile(join(this.root, name), jpeg, { mode: 0o640 });
    }
    this.saved.set(jpeg, name);
    return name;
  }

  /** Absolute path of a stored image; throws for anything that is not a name this store made. */
  path(name: string): string {
    if (!NAME.test(name)) throw new Error(`Not an image name: ${name}`);
    return join(this.root, name);
  }

  /** Removes images; missing files are fine (already removed). */
  async remove(names: Iterable<string | null | undefined>): Promise<void> {
    await Promise.all(
      [...names]
        .filter((n): n is string => !!n && NAME.test(n))
        .map((n) => rm(join(this.root, n), { force: true })),
    );
  }

  /** Bytes of all stored images. */
  async totalBytes(): Promise<number> {
    let total = 0;
    let shards: string[];
    try {
      shards = await readdir(this.root);
    } catch {
      return 0;
    }
    for (const shard of shards) {
      const dir = join(this.root, shard);
      let files: string[];
      try {
        files = await readdir(dir);
      } catch {
        continue;
      }
      const sizes = await Promise.all(
        files.map((f) =>
          stat(join(dir, f)).then(
            (s) => s.size / Math.max(1, s.nlink), // a picture linked under several names counts once
            () => 0,
          ),
        ),
      );
      total += sizes.reduce((a, b) => a + b, 0);
    }
    return Math.round(total);
  }
}

@Global()
@Module({ providers: [ImageStore], exports: [ImageStore] })
export class StorageModule {}
