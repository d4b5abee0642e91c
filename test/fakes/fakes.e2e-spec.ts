import { spawn, type ChildProcess } from 'node:child_process';
import { FakeMjpegCamera } from './mjpeg-camera';
import { freePort, startHttpServer, startSilentTcpServer } from './misc-servers';
import { FakeRtspCamera, stopAllFakeCameras } from './rtsp-camera';
import { describeWithMedia } from '../support/media';

// The fakes are checked with the real clients the product uses (ffmpeg 5.1 and ffprobe), with the same
// timeouts: `-timeout` is in microseconds for both the rtsp and the http protocol.
const RTSP_INPUT = ['-rtsp_transport', 'tcp', '-timeout', '3000000'];
const HTTP_INPUT = ['-timeout', '3000000'];
const GRAY_WIDTH = 320;
const GRAY_HEIGHT = 180;
const FRAME_BYTES = GRAY_WIDTH * GRAY_HEIGHT;

interface RunResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
  ms: number;
}

const children = new Set<ChildProcess>();

function run(command: 'ffmpeg' | 'ffprobe', args: string[], timeoutMs = 15_000): Promise<RunResult> {
  const started = Date.now();
  const quiet = command === 'ffmpeg' ? ['-hide_banner', '-nostdin'] : ['-hide_banner']; // ffprobe has no -nostdin
  const child = spawn(command, [...quiet, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stdout: Buffer.concat(stdout), stderr, ms: Date.now() - started });
    });
  });
}

/** Reads `frames` frames (all of them when absent) from the input and throws them away. */
function decode(input: string[], frames?: number): Promise<RunResult> {
  const limit = frames === undefined ? [] : ['-frames:v', String(frames)];
  return run('ffmpeg', [...input, ...limit, '-f', 'null', '-']);
}

/** The URL with `user:password@` in its authority, percent-encoded the way a user would type it. */
function withCredentials(url: string, username: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(username);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** Decodes `count` frames as 320x180 grayscale, the way motion analysis sees a camera. */
async function grayFrames(input: string[], count: number): Promise<Buffer[]> {
  const result = await run('ffmpeg', [
    ...['-loglevel', 'error', ...input],
    ...['-frames:v', String(count), '-fps_mode', 'passthrough'],
    ...['-vf', `scale=${GRAY_WIDTH}:${GRAY_HEIGHT},format=gray`, '-f', 'rawvideo', 'pipe:1'],
  ]);
  if (result.code !== 0) throw new Error(`ffmpeg failed to decode ${input.join(' ')}:\n${result.stderr}`);
  return splitFrames(result.stdout);
}

function splitFrames(data: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  for (let offset = 0; offset + FRAME_BYTES <= data.length; offset += FRAME_BYTES)
    frames.push(data.subarray(offset, offset + FRAME_BYTES));
  return frames;
}

/** Pixels whose brightness changed by more than a compression-noise threshold between two frames. */
function changedPixels(a: Buffer, b: Buffer): number {
  let changed = 0;
  for (let i = 0; i < a.length; i++) if (Math.abs(a[i] - b[i]) > 24) changed++;
  return changed;
}

function consecutiveChanges(frames: Buffer[]): number[] {
  return frames.slice(1).map((frame, i) => changedPixels(frames[i], frame));
}

/** Nothing moves: no pair of consecutive frames differs beyond noise. */
function isStill(frames: Buffer[]): boolean {
  return consecutiveChanges(frames).every((changed) => changed < 10);
}

// The ball slows down where it turns, so an occasional pair of frames may barely differ.
function isMoving(frames: Buffer[]): boolean {
  const changes = consecutiveChanges(frames);
  return changes.filter((changed) => changed > 40).length >= changes.length - 1;
}

/** A client that keeps decoding grayscale frames, to watch a live stream change under it. */
class LiveReader {
  private data = Buffer.alloc(0);
  private readonly child: ChildProcess;
  readonly closed: Promise<number | null>;

  constructor(input: string[]) {
    this.child = spawn(
      'ffmpeg',
      [
        ...['-hide_banner', '-nostdin', '-loglevel', 'error', ...input, '-fps_mode', 'passthrough'],
        ...['-vf', `scale=${GRAY_WIDTH}:${GRAY_HEIGHT},format=gray`, '-f', 'rawvideo', 'pipe:1'],
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    children.add(this.child);
    this.child.stdout!.on('data', (chunk: Buffer) => (this.data = Buffer.concat([this.data, chunk])));
    this.closed = new Promise((resolve) =>
      this.child.once('close', (code) => {
        children.delete(this.child);
        resolve(code);
      }),
    );
  }

  /** The next `count` frames decoded from now on. */
  async next(count: number, timeoutMs = 8000): Promise<Buffer[]> {
    const from = Math.ceil(this.data.length / FRAME_BYTES);
    await this.until(() => splitFrames(this.data).length >= from + count, timeoutMs);
    return splitFrames(this.data).slice(from, from + count);
  }

  /**
   * Resolves once the last `window` frames decoded from now on satisfy `accepts`; a switch of the picture
   * reaches the decoder a few frames late (encoder and jitter buffers), so the first windows may not.
   */
  async settlesOn(window: number, accepts: (frames: Buffer[]) => boolean, timeoutMs = 6000): Promise<void> {
    const from = Math.ceil(this.data.length / FRAME_BYTES);
    await this.until(() => {
      const frames = splitFrames(this.data).slice(from);
      return frames.length >= window && accepts(frames.slice(-window));
    }, timeoutMs);
  }

  private async until(condition: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`live stream did not get there within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }
}

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await stopAllFakeCameras();
});

describeWithMedia('fake RTSP camera', () => {
  it('serves 640x360 H.264 over RTSP/TCP at the requested frame rate', async () => {
    const camera = await FakeRtspCamera.start({ mounts: ['/cam', '/garage'] });
    expect(camera.url()).toBe(`rtsp://127.0.0.1:${camera.port}/cam`);
    const probe = await run('ffprobe', [
      ...['-v', 'error', ...RTSP_INPUT, '-select_streams', 'v:0', '-of', 'json'],
      ...['-show_entries', 'stream=codec_name,width,height,r_frame_rate', camera.url('/garage')],
    ]);
    expect(probe.code).toBe(0);
    expect(JSON.parse(probe.stdout.toString()).streams).toEqual([
      { codec_name: 'h264', width: 640, height: 360, r_frame_rate: '15/1' },
    ]);
    const missing = await decode([...RTSP_INPUT, '-i', camera.url('/nope')]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('404 Not Found');
    await camera.stop();
  });

  it('answers 401 without the right credentials and streams with them', async () => {
    const camera = await FakeRtspCamera.start({ auth: { username: 'viewer', password: 's3cret:/@' } });
    expect(camera.url()).not.toContain('viewer');
    const [anonymous, wrong, right] = await Promise.all([
      decode([...RTSP_INPUT, '-i', camera.url()]),
      decode([...RTSP_INPUT, '-i', withCredentials(camera.url(), 'viewer', 'nope')]),
      decode([...RTSP_INPUT, '-i', withCredentials(camera.url(), 'viewer', 's3cret:/@')], 2),
    ]);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toContain('401 Unauthorized');
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('401 Unauthorized');
    expect(right.stderr).not.toContain('401 Unauthorized');
    expect(right.code).toBe(0);
    await camera.stop();
  });

  it('refuses connections once stopped and serves again on the same port after restart()', async () => {
    const camera = await FakeRtspCamera.start();
    const port = camera.port;
    const firstPid = camera.pid;
    await camera.stop();
    expect(camera.pid).toBeNull();
    const refused = await decode([...RTSP_INPUT, '-i', camera.url()]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Connection refused');

    await camera.restart();
    expect(camera.port).toBe(port);
    expect(camera.pid).not.toBe(firstPid);
    expect(await grayFrames([...RTSP_INPUT, '-i', camera.url()], 2)).toHaveLength(2);
    await camera.stop();
  });

  it('fails to start with the server error when its port is taken', async () => {
    const busy = await startSilentTcpServer();
    await expect(FakeRtspCamera.start({ port: busy.port })).rejects.toThrow('Address already in use');
    await expect(FakeMjpegCamera.start({ port: busy.port })).rejects.toThrow('EADDRINUSE');
    await busy.close();
  });

  it('switches between a still and a moving picture on the live stream', async () => {
    const camera = await FakeRtspCamera.start({ pattern: 'motion' });
    // Requested before any client: the pipeline built for the first client must already be still.
    await camera.setPattern('still');
    const reader = new LiveReader([...RTSP_INPUT, '-i', camera.url()]);
    await reader.settlesOn(6, isStill);

    await camera.setPattern('motion');
    await reader.settlesOn(6, isMoving);
    await camera.setPattern('still');
    await reader.settlesOn(6, isStill);
    reader.stop();
    await reader.closed;
    await expect(camera.setPattern('still', '/elsewhere')).rejects.toThrow('unknown mount');
    await camera.stop();
  });
});

describeWithMedia('fake MJPEG camera', () => {
  it('streams multipart JPEG that ffmpeg reads, to several clients, and drops them on stop()', async () => {
    const camera = await FakeMjpegCamera.start();
    expect(camera.url()).toBe(`http://127.0.0.1:${camera.port}/video.mjpg`);
    const probe = await run('ffprobe', [
      ...['-v', 'error', ...HTTP_INPUT, '-select_streams', 'v:0'],
      ...['-show_entries', 'stream=codec_name,width,height', '-of', 'json', camera.url()],
    ]);
    expect(probe.code).toBe(0);
    expect(JSON.parse(probe.stdout.toString()).streams).toEqual([
      { codec_name: 'mjpeg', width: 640, height: 360 },
    ]);

    const readers = [
      new LiveReader([...HTTP_INPUT, '-i', camera.url()]),
      new LiveReader(['-i', camera.url()]),
    ];
    await Promise.all(readers.map((reader) => reader.next(3)));
    expect(camera.clientCount()).toBe(2);
    const missing = await decode([...HTTP_INPUT, '-i', camera.url().replace('video.mjpg', 'other')]);
    expect(missing.stderr).toContain('404 Not Found');

    await camera.stop();
    expect(camera.clientCount()).toBe(0);
    await Promise.all(readers.map((reader) => reader.closed)); // their connections were cut
    const refused = await decode([...HTTP_INPUT, '-i', camera.url()]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Connection refused');

    await camera.restart();
    expect(await grayFrames([...HTTP_INPUT, '-i', camera.url()], 2)).toHaveLength(2);
    await camera.stop();
  });

  it('answers 401 with a Basic challenge without the right credentials', async () => {
    const camera = await FakeMjpegCamera.start({ auth: { username: 'viewer', password: 'pa ss' } });
    const response = await fetch(camera.url());
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="[^"]+"$/);
    const [anonymous, right] = await Promise.all([
      decode([...HTTP_INPUT, '-i', camera.url()]),
      decode([...HTTP_INPUT, '-i', withCredentials(camera.url(), 'viewer', 'pa ss')], 2),
    ]);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toContain('401 Unauthorized');
    expect(right.code).toBe(0);
    await camera.stop();
  });

  it('sends identical frames when still and changing frames when in motion', async () => {
    const camera = await FakeMjpegCamera.start({ pattern: 'still', fps: 10 });
    const input = [...HTTP_INPUT, '-i', camera.url()];
    expect(consecutiveChanges(await grayFrames(input, 4))).toEqual([0, 0, 0]);
    await camera.setPattern('motion');
    expect(isMoving(await grayFrames(input, 4))).toBe(true);
    await camera.stop();
  });
});

describe('misc servers', () => {
  it('gives refused ports, hanging servers and plain HTTP servers', async () => {
    const [silent, web, closedPort] = await Promise.all([
      startSilentTcpServer(),
      startHttpServer((_request, response) =>
        response.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>hi</h1>'),
      ),
      freePort(),
    ]);
    const [rtspHang, httpHang, rtspRefused, notVideo] = await Promise.all([
      decode([...RTSP_INPUT, '-i', `rtsp://127.0.0.1:${silent.port}/cam`]),
      decode([...HTTP_INPUT, '-i', `http://127.0.0.1:${silent.port}/video.mjpg`]),
      decode([...RTSP_INPUT, '-i', `rtsp://127.0.0.1:${closedPort}/cam`]),
      decode([...HTTP_INPUT, '-i', `http://127.0.0.1:${web.port}/`]),
    ]);
    for (const hang of [rtspHang, httpHang]) {
      expect(hang.code).not.toBe(0);
      expect(hang.ms).toBeGreaterThanOrEqual(2900); // ffmpeg gave up through -timeout, not at once
    }
    // ffmpeg 5.1 words an RTSP read timeout like garbage; only the elapsed time tells them apart.
    expect(rtspHang.stderr).toContain('Invalid data found when processing input');
    expect(httpHang.stderr).toContain('Connection timed out');
    expect(rtspRefused.stderr).toContain('Connection refused');
    expect(notVideo.code).not.toBe(0);
    expect(notVideo.ms).toBeLessThan(2900);
    expect(notVideo.stderr).toContain('Invalid data found when processing input');
    await Promise.all([silent.close(), web.close()]);
  });
});
