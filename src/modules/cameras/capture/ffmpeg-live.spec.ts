import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import {
  createServer as createTcpServer,
  type AddressInfo,
  type Server as TcpServer,
  type Socket,
} from 'node:net';
import {
  ANALYSIS_FRAME_BYTES,
  captureArgs,
  CAPTURE_STDIO,
  FFMPEG_BINARY,
  JpegFrameSplitter,
  StreamSource,
  testStream,
} from './ffmpeg';

/**
 * testStream and captureArgs against the real ffmpeg: an MJPEG camera made of ffmpeg's own test pattern
 * served by a tiny Node HTTP server, a closed port and a TCP server that accepts and never answers.
 */

const PASSWORD = 'p@ss:w/rd%';
const none = { device: null, username: null, password: null };

/** Width and height from a JPEG's SOF0/SOF2 segment. */
function jpegSize(jpeg: Buffer): string | null {
  for (let i = 2; i + 9 < jpeg.length; i++) {
    if (jpeg[i] === 0xff && (jpeg[i + 1] === 0xc0 || jpeg[i + 1] === 0xc2))
      return `${jpeg.readUInt16BE(i + 7)}x${jpeg.readUInt16BE(i + 5)}`;
  }
  return null;
}

/** Processes whose parent is this one: [pid, state, command line]. */
function children(): { pid: number; state: string; cmdline: string }[] {
  const result: { pid: number; state: string; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== process.pid) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      result.push({ pid: Number(entry), state: fields[0], cmdline });
    } catch {
      // The process ended while we looked.
    }
  }
  return result;
}

/** The camera server's own ffmpeg processes, left out of the checks below. */
const producerPids = new Set<number>();

/** No ffmpeg of ours still talks to `port`, and none is left a zombie. */
function expectNoFfmpegFor(port: number): void {
  const left = children().filter(
    (c) => !producerPids.has(c.pid) && (c.state === 'Z' || c.cmdline.includes(`:${port}/`)),
  );
  expect(left).toEqual([]);
}

// Needs Debian's ffmpeg: the test set-up sets VIGIL_TEST_MEDIA when it is installed (required in CI).
const describeWithFfmpeg = process.env.VIGIL_TEST_MEDIA ? describe : describe.skip;

describeWithFfmpeg('ffmpeg against live servers', () => {
  let camera: HttpServer;
  let cameraPort: number;
  const producers = new Set<ChildProcess>();
  let silent: TcpServer;
  let silentPort: number;
  const silentSockets = new Set<Socket>();
  let closedPort: number;

  beforeAll(async () => {
    camera = createHttpServer((req, res) => {
      const path = req.url ?? '/';
      if (path === '/page') {
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>Login</body></html>');
        return;
      }
      if (path === '/secure') {
        const expected = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
        if (req.headers.authorization !== expected) {
          res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="cam"' }).end();
          return;
        }
      } else if (path !== '/video') {
        res.writeHead(404).end();
        return;
      }
      // A 640x360 MJPEG camera at 10 fps: ffmpeg's test pattern, muxed as multipart JPEG in real time.
      const producer = spawn(
        FFMPEG_BINARY,
        [
          '-nostdin',
          '-loglevel',
          'error',
          '-re',
          '-f',
          'lavfi',
          '-i',
          'testsrc2=size=640x360:rate=10',
          '-c:v',
          'mjpeg',
          '-q:v',
          '5',
          '-f',
          'mpjpeg',
          'pipe:1',
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      producers.add(producer);
      if (producer.pid !== undefined) producerPids.add(producer.pid);
      producer.on('exit', () => producers.delete(producer));
      res.writeHead(200, { 'Content-Type': 'multipart/x-mixed-replace;boundary=ffmpeg' });
      producer.stdout.pipe(res);
      res.on('close', () => producer.kill('SIGKILL'));
    });
    camera.listen(0, '127.0.0.1');
    await once(camera, 'listening');
    cameraPort = (camera.address() as AddressInfo).port;

    silent = createTcpServer((socket) => {
      silentSockets.add(socket);
      socket.on('close', () => silentSockets.delete(socket));
    });
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    silentPort = (silent.address() as AddressInfo).port;

    const probe = createTcpServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    closedPort = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, 'close');
  });

  afterAll(async () => {
    for (const socket of silentSockets) socket.destroy();
    camera.closeAllConnections();
    await Promise.all([
      new Promise((resolve) => camera.close(resolve)),
      new Promise((resolve) => silent.close(resolve)),
      ...[...producers].map((producer) => {
        producer.kill('SIGKILL');
        return once(producer, 'exit');
      }),
    ]);
  });

  const mjpeg = (path: string, credentials: Partial<StreamSource> = {}): StreamSource => ({
    ...none,
    sourceType: 'mjpeg',
    url: `http://127.0.0.1:${cameraPort}${path}`,
    ...credentials,
  });

  it('connects to an MJPEG camera and returns its stream info and a JPEG thumbnail', async () => {
    const started = Date.now();
    const result = await testStream(mjpeg('/video'));
    expect(result).toMatchObject({
      success: true,
      resolution: '640x360',
      codec: 'mjpeg',
      fps: null, // the multipart demuxer only guesses a rate
    });
    expect(result.message).toBe(
      `Connected to 127.0.0.1:${cameraPort}: mjpeg 640x360, first frame after ${result.latency_ms} ms`,
    );
    expect(result.latency_ms).toBeGreaterThan(0);
    expect(result.latency_ms).toBeLessThanOrEqual(Date.now() - started);
    expect(result.thumbnail).toMatch(/^data:image\/jpeg;base64,/);
    const jpeg = Buffer.from(result.thumbnail!.slice('data:image/jpeg;base64,'.length), 'base64');
    expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(jpeg.subarray(-2)).toEqual(Buffer.from([0xff, 0xd9]));
    expect(jpegSize(jpeg)).toBe('640x360');
    expectNoFfmpegFor(cameraPort);
  });

  it('sends credentials with special characters and never returns them', async () => {
    const ok = await testStream(mjpeg('/secure', { username: 'admin', password: PASSWORD }));
    expect(ok.success).toBe(true);
    const wrong = await testStream(mjpeg('/secure', { username: 'admin', password: 'wr@ng:pass%' }));
    expect(wrong).toMatchObject({
      success: false,
      message: 'Authentication failed: the camera rejected the username or password (401 Unauthorized)',
      thumbnail: null,
    });
    for (const result of [ok, wrong]) {
      const text = JSON.stringify(result);
      for (const secret of [PASSWORD, 'p%40ss', 'wr@ng', 'wr%40ng']) expect(text).not.toContain(secret);
    }
  });

  it('reports a web page as not a video stream', async () => {
    const result = await testStream(mjpeg('/page'));
    expect(result.success).toBe(false);
    expect(result.message).toMatch(/^Not a video stream: 127\.0\.0\.1:\d+ answered/);
  });

  it('reports a closed port as connection refused at once', async () => {
    const started = Date.now();
    const result = await testStream({
      ...none,
      sourceType: 'rtsp',
      url: `rtsp://127.0.0.1:${closedPort}/live`,
      username: 'admin',
      password: PASSWORD,
    });
    expect(result).toEqual({
      success: false,
      message: `Connection refused by 127.0.0.1:${closedPort}`,
      resolution: null,
      fps: null,
      codec: null,
      latency_ms: null,
      thumbnail: null,
    });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('reports a silent RTSP server as a timeout after the I/O timeout', async () => {
    const started = Date.now();
    const result = await testStream({
      ...none,
      sourceType: 'rtsp',
      url: `rtsp://127.0.0.1:${silentPort}/live`,
    });
    const elapsed = Date.now() - started;
    expect(result.success).toBe(false);
    expect(result.message).toBe(`Connection timed out: no answer from 127.0.0.1:${silentPort} within 5 s`);
    expect(elapsed).toBeGreaterThanOrEqual(4500);
    expect(elapsed).toBeLessThan(15000);
    expectNoFfmpegFor(silentPort);
  });

  it('kills ffmpeg itself when it would wait longer than the test allows', async () => {
    const started = Date.now();
    const result = await testStream(
      { ...none, sourceType: 'mjpeg', url: `http://127.0.0.1:${silentPort}/video` },
      { timeoutMs: 1500, ioTimeoutMs: 60000 },
    );
    const elapsed = Date.now() - started;
    expect(result.success).toBe(false);
    expect(result.message).toBe(`Connection timed out: no video from 127.0.0.1:${silentPort} within 1.5 s`);
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(elapsed).toBeLessThan(4000);
    expectNoFfmpegFor(silentPort);
  });

  it('captures gray analysis frames and colour JPEGs of the same pictures at the frame rate', async () => {
    const capture = spawn(FFMPEG_BINARY, captureArgs(mjpeg('/video'), 5), { stdio: CAPTURE_STDIO });
    const [, stdout, stderr, jpegPipe] = capture.stdio;
    let grayBytes = 0;
    const splitter = new JpegFrameSplitter();
    const jpegs: Buffer[] = [];
    let errors = '';
    stdout!.on('data', (chunk: Buffer) => (grayBytes += chunk.length));
    jpegPipe!.on('data', (chunk: Buffer) => jpegs.push(...splitter.push(chunk)));
    stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));

    const exited = once(capture, 'close');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    capture.kill('SIGTERM');
    await exited;

    expect(errors).toBe('');
    // The source sends 10 fps; 5 fps for ~3 s (the first frame after ~0.2 s of start-up).
    const grayFrames = Math.floor(grayBytes / ANALYSIS_FRAME_BYTES);
    expect(grayFrames).toBeGreaterThanOrEqual(10);
    expect(grayFrames).toBeLessThanOrEqual(17);
    expect(Math.abs(jpegs.length - grayFrames)).toBeLessThanOrEqual(1);
    expect(jpegSize(jpegs[0])).toBe('640x360');
    expectNoFfmpegFor(cameraPort);
  });
});
