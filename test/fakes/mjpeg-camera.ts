import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { stderrTail, terminateChild, trackFake, untrackFake } from './fake-lifecycle';
import type { FakeCameraPattern } from './rtsp-camera';

export { stopAllFakeCameras } from './fake-lifecycle';

export interface FakeMjpegCameraOptions {
  /** TCP port on 127.0.0.1; 0 or absent picks a free one (kept across `restart()`). */
  port?: number;
  /** Path of the stream; every other path answers 404. Default `/video.mjpg`. */
  path?: string;
  width?: number;
  height?: number;
  fps?: number;
  /** `still`: one frozen test picture; `motion`: ffmpeg's animated testsrc2. Default motion. */
  pattern?: FakeCameraPattern;
  /** When set, requests without these Basic credentials get 401 with a `WWW-Authenticate` challenge. */
  auth?: { username: string; password: string };
  /**
   * `right`: instead of testsrc2, a white square on grey that moves (pattern `motion`) or stands (`still`) in
   * the right half of the picture only, for tests of detection zones. Default `full` (testsrc2).
   */
  motionArea?: 'full' | 'right';
}

const BOUNDARY = 'fakecameraframe';
const REALM = 'Fake MJPEG Camera';
const FIRST_FRAME_TIMEOUT_MS = 10_000;
// A client that has this much unsent data skips frames instead of buffering without bound, like a camera.
const MAX_BUFFERED_BYTES = 1 << 20;
const SOI = Buffer.from([0xff, 0xd8]);
const EOI = Buffer.from([0xff, 0xd9]);

/**
 * A real MJPEG-over-HTTP camera on 127.0.0.1: `multipart/x-mixed-replace` parts cut from one ffmpeg child's
 * `image2pipe` output and broadcast to every connected client.
 */
export class FakeMjpegCamera {
  private server: Server | null = null;
  private source: JpegSource | null = null;
  private boundPort: number;
  private pattern: FakeCameraPattern;
  private latestFrame: Buffer | null = null;
  private readonly clients = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private readonly path: string;

  private constructor(private readonly options: FakeMjpegCameraOptions) {
    this.boundPort = options.port ?? 0;
    this.pattern = options.pattern ?? 'motion';
    this.path = options.path ?? '/video.mjpg';
    if (!this.path.startsWith('/')) throw new Error(`path must start with '/': ${this.path}`);
  }

  static async start(options: FakeMjpegCameraOptions = {}): Promise<FakeMjpegCamera> {
    const camera = new FakeMjpegCamera(options);
    await camera.launch();
    return camera;
  }

  get port(): number {
    return this.boundPort;
  }

  /** The stream's address, never with credentials. */
  url(): string {
    return `http://127.0.0.1:${this.boundPort}${this.path}`;
  }

  /** Number of clients currently receiving the stream. */
  clientCount(): number {
    return this.clients.size;
  }

  /**
   * Switches the picture: the ffmpeg child is replaced by one with the other source and this resolves when
   * its first frame has gone out. Connected clients stay connected. While stopped, it is kept for `restart()`.
   */
  async setPattern(pattern: FakeCameraPattern): Promise<void> {
    if (pattern === this.pattern && this.source) return;
    this.pattern = pattern;
    if (!this.server) return;
    await this.replaceSource();
  }

  /** Closes the server, drops every open connection and kills ffmpeg; the port is closed afterwards. */
  async stop(): Promise<void> {
    untrackFake(this);
    const server = this.server;
    const source = this.source;
    this.server = null;
    this.source = null;
    this.latestFrame = null;
    for (const client of this.clients) client.destroy();
    this.clients.clear();
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await Promise.all([
      source?.stop(),
      server && new Promise<void>((resolve) => server.close(() => resolve())),
    ]);
  }

  /** Starts again on the same port with the same options and the pattern last requested. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  private async launch(): Promise<void> {
    trackFake(this);
    try {
      await this.replaceSource();
      const server = createServer((request, response) => this.handle(request, response));
      server.on('connection', (socket) => {
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.boundPort, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      this.server = server;
      const address = server.address();
      if (address && typeof address === 'object') this.boundPort = address.port;
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  // One ffmpeg at a time: the old one is killed before the new one starts, and its frames are ignored.
  private async replaceSource(): Promise<void> {
    const old = this.source;
    this.source = null;
    await old?.stop();
    const { width = 640, height = 360, fps = 15 } = this.options;
    const source = new JpegSource(
      width,
      height,
      fps,
      this.pattern,
      this.options.motionArea ?? 'full',
      (frame) => {
        if (this.source === source) this.broadcast(frame);
      },
    );
    this.source = source;
    await source.firstFrame;
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const pathname = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    if (pathname !== this.path) {
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not Found\n');
      return;
    }
    if (!this.authorized(request.headers.authorization)) {
      response
        .writeHead(401, { 'WWW-Authenticate': `Basic realm="${REALM}"`, 'Content-Type': 'text/plain' })
        .end('Unauthorized\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    response.writeHead(200, {
      'Content-Type': `multipart/x-mixed-replace; boundary=${BOUNDARY}`,
      'Cache-Control': 'no-cache, no-store, must-revalidate',
      Pragma: 'no-cache',
      Connection: 'close',
    });
    if (request.method === 'HEAD') {
      response.end();
      return;
    }
    this.clients.add(response);
    response.once('close', () => this.clients.delete(response));
    if (this.latestFrame) writePart(response, this.latestFrame);
  }

  private authorized(header: string | undefined): boolean {
    const auth = this.options.auth;
    if (!auth) return true;
    const match = /^Basic\s+(\S+)$/i.exec(header ?? '');
    if (!match) return false;
    return Buffer.from(match[1], 'base64').toString('utf8') === `${auth.username}:${auth.password}`;
  }

  private broadcast(frame: Buffer): void {
    this.latestFrame = frame;
    for (const client of this.clients) {
      if (client.writableLength > MAX_BUFFERED_BYTES) continue;
      writePart(client, frame);
    }
  }
}

function writePart(response: ServerResponse, frame: Buffer): void {
  response.write(`--${BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: ${frame.length}\r\n\r\n`);
  response.write(frame);
  response.write('\r\n');
}

/** One ffmpeg child producing JPEG frames at the camera's rate, cut on the SOI/EOI markers (FFD8 ... FFD9). */
class JpegSource {
  readonly firstFrame: Promise<void>;
  private readonly child: ChildProcess;
  private buffer: Buffer = Buffer.alloc(0);
  private stderr = '';
  private stopping = false;
  private gotFrame = false;
  private resolveFirstFrame: () => void = () => undefined;

  constructor(
    width: number,
    height: number,
    fps: number,
    pattern: FakeCameraPattern,
    motionArea: 'full' | 'right',
    private readonly onFrame: (frame: Buffer) => void,
  ) {
    // `realtime` paces the otherwise as-fast-as-possible lavfi source at the camera's frame rate; `loop`
    // repeats the first picture so that every still frame is byte-for-byte the same.
    const still = pattern === 'still';
    const input =
      motionArea === 'right'
        ? // A square of a fifth of the height sweeping back and forth across the right half (x from 55 % to 90 %).
          `color=c=gray:size=${width}x${height}:rate=${fps}[bg];color=c=white:size=${Math.round(height / 5)}x` +
          `${Math.round(height / 5)}:rate=${fps}[box];[bg][box]overlay=eval=frame:y=H*0.4:` +
          `x='W*0.55+W*0.35*abs(mod(t/3\\,2)-1)'` +
          (still ? ',loop=loop=-1:size=1' : '') +
          ',realtime'
        : `testsrc2=size=${width}x${height}:rate=${fps},` +
          (still ? 'loop=loop=-1:size=1,realtime' : 'realtime');
    this.child = spawn(
      'ffmpeg',
      [
        ...['-hide_banner', '-nostdin', '-loglevel', 'error'],
        ...['-f', 'lavfi', '-i', input],
        ...['-f', 'image2pipe', '-c:v', 'mjpeg', '-q:v', '5', 'pipe:1'],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child.stderr?.on('data', (chunk: Buffer) => (this.stderr = stderrTail(this.stderr, chunk)));
    this.child.stdout?.on('data', (chunk: Buffer) => this.onData(chunk));
    this.firstFrame = new Promise<void>((resolve, reject) => {
      const fail = (reason: string): void => {
        clearTimeout(timer);
        if (!this.gotFrame) reject(new Error(`fake MJPEG camera's ffmpeg ${reason}\n${this.stderr.trim()}`));
      };
      const timer = setTimeout(() => {
        fail(`gave no frame within ${FIRST_FRAME_TIMEOUT_MS} ms`);
        void this.stop();
      }, FIRST_FRAME_TIMEOUT_MS);
      this.child.once('error', (error) => fail(`could not start: ${error.message}`));
      this.child.once('exit', (code, signal) =>
        fail(this.stopping ? 'was stopped before its first frame' : `exited (${signal ?? `code ${code}`})`),
      );
      this.resolveFirstFrame = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    // A stop() before the first frame must not leave an unhandled rejection behind.
    this.firstFrame.catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await terminateChild(this.child, 2000);
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const start = this.buffer.indexOf(SOI);
      if (start < 0) {
        this.buffer = Buffer.alloc(0);
        return;
      }
      const end = this.buffer.indexOf(EOI, start + SOI.length);
      if (end < 0) {
        this.buffer = this.buffer.subarray(start);
        return;
      }
      const frame = Buffer.from(this.buffer.subarray(start, end + EOI.length));
      this.buffer = this.buffer.subarray(end + EOI.length);
      this.emit(frame);
    }
  }

  private emit(frame: Buffer): void {
    if (this.stopping) return;
    this.gotFrame = true;
    this.onFrame(frame);
    this.resolveFirstFrame();
  }
}
