import { embeddedMemorySettings } from './embedded-postgres';

const GIB = 1024 ** 3;

describe('embeddedMemorySettings', () => {
  it('gives the embedded PostgreSQL an eighth of the RAM as cache and tells the planner about half', () => {
    expect(embeddedMemorySettings(4 * GIB)).toEqual({ sharedBuffersMb: 512, effectiveCacheMb: 2048 });
    expect(embeddedMemorySettings(8 * GIB)).toEqual({ sharedBuffersMb: 1024, effectiveCacheMb: 4096 });
  });

  it('never goes below PostgreSQL defaults on a small machine', () => {
    expect(embeddedMemorySettings(512 * 1024 ** 2)).toEqual({ sharedBuffersMb: 128, effectiveCacheMb: 512 });
  });

  it('stops at 2 GB of cache (16 GB planner hint) on a large machine', () => {
    expect(embeddedMemorySettings(24 * GIB)).toEqual({ sharedBuffersMb: 2048, effectiveCacheMb: 12288 });
    expect(embeddedMemorySettings(256 * GIB)).toEqual({ sharedBuffersMb: 2048, effectiveCacheMb: 16384 });
  });
});
