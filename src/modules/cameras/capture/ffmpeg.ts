import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';

/**
 * Everything about talking to ffmpeg except supervising a long-running capture: the argv for a source,
 * removing credentials from its output, turning its stderr into a message a person can act on, splitting
 * its JPEG output, and the one-shot connection test behind `POST /cameras/test`.
 *
 * Choices verified against Debian's ffmpeg 5.1 (see ffmpeg.spec.ts for the stderr samples):
 * - RTSP always over TCP (`-rtsp_transport tcp`): UDP needs open ports and loses packets, and interleaved
 *   TCP works through NAT and firewalls. `-timeout` is the socket I/O timeout in microseconds (5.1 dropped
 *   `-stimeout`). rtsps uses the same options; like every ffmpeg TLS client it does not verify the
 *   certificate, which is what cameras with self-signed certificates need.
 * - MJPEG over HTTP(S): no `-f`. ffmpeg picks `mpjpeg` from a `multipart/x-mixed-replace` answer, `image2`
 *   from a single `image/jpeg` snapshot and `jpeg_pipe` from concatenated JPEGs without multipart, so all
 *   three work for a test. `-probesize 32` because every JPEG carries its own size: the default probe
 *   reads up to 5 MB of a slow raw-JPEG stream first (12 s at 95 kB/s, measured). Timestamps come from
 *   the wall clock (`-use_wallclock_as_timestamps 1`): those demuxers invent 25 fps whatever the camera
 *   sends, which would make the frame-rate cap wrong.
 * - USB: `-f v4l2 -framerate <fps> -i /dev/videoN`; the driver picks the nearest rate it supports.
 * - Latency: no `-fflags nobuffer` and no `-flags low_delay`. nobuffer only drops the ~2 s of packets read
 *   while probing; after that burst the delay is the same either way. Its cost, measured: the decoder starts
 *   mid-GOP, so an HEVC camera's first frame comes out grey (false motion), and a snapshot URL's only frame
 *   is lost. low_delay makes the H.264 decoder skip frame reordering, which corrupts cameras that send
 *   B-frames. So the first ~2 s of frames arrive in one burst at start-up, then in real time.
 */

export const FFMPEG_BINARY = 'ffmpeg';

/** Grayscale analysis frames: one byte per pixel, the camera's aspect ratio is ignored. */
export const ANALYSIS_WIDTH = 320;
export const ANALYSIS_HEIGHT = 180;
export const ANALYSIS_FRAME_BYTES = ANALYSIS_WIDTH * ANALYSIS_HEIGHT;

/** Longest side of the colour JPEG kept for snapshots and events; the aspect ratio is kept. */
export const MAX_JPEG_WIDTH = 1280;
/** Width cap of the test's thumbnail. */
export const THUMBNAIL_MAX_WIDTH = 640;
/** ffmpeg's JPEG quantizer scale (2 best .. 31 worst); 5 looks clean at about a tenth of the raw size. */
export const JPEG_QSCALE = 5;

export const DEFAULT_IO_TIMEOUT_MS = 5000;
export const DEFAULT_TEST_TIMEOUT_MS = 12000;

/** A JPEG (or garbage before one) larger than this is dropped rather than buffered further. */
export const MAX_JPEG_BYTES = 16 * 1024 * 1024;

/** The capture's stdio: stdin closed, analysis frames on 1, ffmpeg's errors on 2, colour JPEGs on 3. */
export const CAPTURE_STDIO: StdioOptions = ['ignore', 'pipe', 'pipe', 'pipe'];

export interface StreamSource {
  sourceType: 'rtsp' | 'mjpeg' | 'usb';
  url: string | null;
  device: string | null;
  username: string | null;
  password: string | null;
}

const DEFAULT_PORTS: Record<string, string> = { rtsp: '554', rtsps: '322', http: '80', https: '443' };

/**
 * Percent-encodes a username or password for URL userinfo. encodeURIComponent leaves `!'()*` alone;
 * they are legal there, but encoding them too keeps every non-alphanumeric character unambiguous.
 */
export function encodeUserinfo(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * The URL ffmpeg opens: the stored URL with the credentials as percent-encoded userinfo (ffmpeg decodes
 * it for Basic and Digest auth, verified with `p@ss:w/rd%`). The URL is otherwise passed as typed, not
 * normalised, because cameras can be picky about their paths and query strings.
 */
export function urlWithCredentials(
  url: string,
  credentials: Pick<StreamSource, 'username' | 'password'>,
): string {
  const { username, password } = credentials;
  if (!username && !password) return url;
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (!match) return url;
  const [, scheme, authority, rest] = match;
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  const userinfo = encodeUserinfo(username ?? '') + (password ? `:${encodeUserinfo(password)}` : '');
  return `${scheme}${userinfo}@${host}${rest}`;
}

/** Where a source is, for messages: `host:port` of its URL (default port filled in) or its device path. */
export function sourceAddress(source: Pick<StreamSource, 'sourceType' | 'url' | 'device'>): string {
  if (source.sourceType === 'usb') return source.device ?? 'the USB device';
  if (!source.url) return 'the camera';
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)/i.exec(source.url);
  if (!match) return 'the camera';
  const scheme = match[1].toLowerCase();
  const hostPort = match[2].slice(match[2].lastIndexOf('@') + 1);
  const hasPort = /:\d+$/.test(hostPort) && !/^\[[^\]]*\]$/.test(hostPort);
  const port = DEFAULT_PORTS[scheme];
  return hasPort || !port ? hostPort : `${hostPort}:${port}`;
}

function microseconds(ms: number): string {
  return String(Math.max(1, Math.round(ms * 1000)));
}

/** Input part of the argv: protocol options + `-i <url>`; credentials percent-encoded into the URL's userinfo. */
export function inputArgs(
  source: StreamSource,
  options: { ioTimeoutMs: number; frameRate?: number },
): string[] {
  switch (source.sourceType) {
    case 'rtsp': {
      if (!source.url) throw new Error('An RTSP source needs a url');
      return [
        '-rtsp_transport',
        'tcp',
        '-timeout',
        microseconds(options.ioTimeoutMs),
        '-i',
        urlWithCredentials(source.url, source),
      ];
    }
    case 'mjpeg': {
      if (!source.url) throw new Error('An MJPEG source needs a url');
      return [
        '-timeout',
        microseconds(options.ioTimeoutMs),
        '-use_wallclock_as_timestamps',
        '1',
        '-probesize',
        '32',
        '-i',
        urlWithCredentials(source.url, source),
      ];
    }
    case 'usb': {
      if (!source.device) throw new Error('A USB source needs a device');
      const rate = options.frameRate !== undefined ? ['-framerate', String(options.frameRate)] : [];
      return ['-f', 'v4l2', ...rate, '-i', source.device];
    }
  }
}

function checkFrameRate(frameRate: number): void {
  if (!Number.isFinite(frameRate) || frameRate <= 0 || frameRate > 1000)
    throw new RangeError(`frameRate must be a positive number of frames per second, got ${frameRate}`);
}

/**
 * At most `frameRate` frames a second, never a duplicate. A frame passes when it falls in a later
 * 1/frameRate slot than the last one passed (slots centred on whole multiples, so a camera sending exactly
 * that rate never has two frames land in one slot through rounding). Unlike the `fps` filter this does not
 * repeat frames when the camera is slower or stalls (repeats would look like "no motion" and come in a
 * burst after a network hiccup). Frames without a timestamp, the first frame and a timestamp that jumps
 * back (camera restarted its clock) always pass, so the stream can never get stuck.
 */
export function frameRateSelect(frameRate: number): string {
  checkFrameRate(frameRate);
  const r = String(frameRate);
  return (
    `select='isnan(t)+isnan(prev_selected_t)+lt(t,prev_selected_t)` +
    `+gte(floor(t*${r}+0.5)-floor(prev_selected_t*${r}+0.5),1)'`
  );
}

/** One decode, capped to `frameRate`, split into the gray analysis frames and the colour JPEGs. */
export function captureFilterGraph(frameRate: number): string {
  return (
    `[0:v:0]${frameRateSelect(frameRate)},split=2[analysis][colour];` +
    `[analysis]scale=${ANALYSIS_WIDTH}:${ANALYSIS_HEIGHT}:flags=area,format=gray[gray];` +
    `[colour]scale='min(${MAX_JPEG_WIDTH},iw)':'min(${MAX_JPEG_WIDTH},ih)'` +
    `:force_original_aspect_ratio=decrease:force_divisible_by=2[jpeg]`
  );
}

/**
 * Full argv (without the binary) for capture: analysis frames = raw gray ANALYSIS_WIDTH x ANALYSIS_HEIGHT at
 * frameRate on pipe:1 (stdout); colour JPEG (image2pipe, mjpeg) at the same rate on pipe:3 (fd 3, see
 * CAPTURE_STDIO). The n-th gray frame and the n-th JPEG are the same picture. `-fps_mode passthrough` because
 * the default for these muxers is constant frame rate, which would duplicate frames to fill gaps;
 * `-flush_packets 1` writes each frame to the pipe as soon as it is encoded.
 */
export function captureArgs(
  source: StreamSource,
  frameRate: number,
  options: { ioTimeoutMs?: number } = {},
): string[] {
  checkFrameRate(frameRate);
  const ioTimeoutMs = options.ioTimeoutMs ?? DEFAULT_IO_TIMEOUT_MS;
  return [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'error',
    ...inputArgs(source, { ioTimeoutMs, frameRate }),
    '-filter_complex',
    captureFilterGraph(frameRate),
    '-map',
    '[gray]',
    '-fps_mode',
    'passthrough',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'gray',
    '-flush_packets',
    '1',
    'pipe:1',
    '-map',
    '[jpeg]',
    '-fps_mode',
    'passthrough',
    '-c:v',
    'mjpeg',
    '-q:v',
    String(JPEG_QSCALE),
    '-f',
    'image2pipe',
    '-flush_packets',
    '1',
    'pipe:3',
  ];
}

/** Argv of the one-shot test: info-level log (for the stream line), one video frame as a JPEG on stdout. */
export function testArgs(source: StreamSource, options: { ioTimeoutMs?: number } = {}): string[] {
  return [
    '-nostdin',
    '-hide_banner',
    '-nostats',
    '-loglevel',
    'info',
    ...inputArgs(source, { ioTimeoutMs: options.ioTimeoutMs ?? DEFAULT_IO_TIMEOUT_MS }),
    '-map',
    '0:v:0',
    '-frames:v',
    '1',
    '-vf',
    `scale='min(${THUMBNAIL_MAX_WIDTH},iw)':-2`,
    '-c:v',
    'mjpeg',
    '-q:v',
    String(JPEG_QSCALE),
    '-f',
    'image2pipe',
    'pipe:1',
  ];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A pattern matching `secret` written raw, percent-encoded, or any mix (each character either literally or
 * as its UTF-8 `%XX` bytes in either hex case, a space also as `+`), so every way a URL can carry it matches.
 */
function secretPattern(secret: string): string {
  let pattern = '';
  for (const char of secret) {
    const bytes = [...Buffer.from(char, 'utf8')];
    const encoded = bytes
      .map((b) => {
        const hex = b.toString(16).padStart(2, '0');
        return `%[${hex[0].toLowerCase()}${hex[0].toUpperCase()}][${hex[1].toLowerCase()}${hex[1].toUpperCase()}]`;
      })
      .join('');
    // The encoded form first: for `%` the literal alternative would otherwise match the start of `%25`.
    const alternatives = [encoded, escapeRegExp(char)];
    if (char === ' ') alternatives.push('\\+');
    pattern += `(?:${alternatives.join('|')})`;
  }
  return pattern;
}

/** Below this length a password is only redacted where it stands alone, not inside words. */
const SHORT_SECRET = 4;
const REDACTED = '***';

/**
 * Removes credentials from any text (ffmpeg stderr, error messages): the password raw and percent-encoded,
 * and any `scheme://user:pass@` userinfo. A password of 1 to 3 characters is only replaced where it is not
 * part of a word: replacing every "e" would garble the very messages the classification reads, and such a
 * password can only appear in a URL's userinfo, which is removed as a whole anyway.
 */
export function redactSecrets(text: string, source: Pick<StreamSource, 'username' | 'password'>): string {
  let result = text;
  const { password } = source;
  if (password) {
    let pattern = secretPattern(password);
    if ([...password].length < SHORT_SECRET) pattern = `(?<![A-Za-z0-9])${pattern}(?![A-Za-z0-9])`;
    result = result.replace(new RegExp(pattern, 'g'), REDACTED);
  }
  // Userinfo may hold an unencoded `@`; the greedy run stops only at what ends an authority.
  return result.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#]*@/gi, `$1${REDACTED}@`);
}

export type FailureKind =
  | 'auth_failed'
  | 'timeout'
  | 'refused'
  | 'not_video'
  | 'not_found'
  | 'host_not_found'
  | 'device_not_found'
  | 'tls'
  | 'ffmpeg_missing'
  | 'unknown';

export interface FailureContext {
  /** `host:port` (or device) for the message; found in the stderr when not given. */
  host?: string;
  /** The I/O timeout ffmpeg ran with, for "within N s" and to recognise a silent RTSP server. */
  timeoutMs?: number;
  /** How long ffmpeg ran. */
  elapsedMs?: number;
  /** Whether credentials were sent, to tell "wrong password" from "a password is needed". */
  hasCredentials?: boolean;
}

export const FFMPEG_MISSING_MESSAGE = 'ffmpeg is not installed on the server';

function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

/** `host:port` from ffmpeg's own lines (`Connection to tcp://h:p...`, `scheme://h:p/path: error`). */
function hostFromStderr(stderr: string): string | undefined {
  const tcp = /Connection to (?:tcp|tls):\/\/([^\s?/]+)/.exec(stderr);
  if (tcp) return tcp[1];
  const url = /\b(rtsps?|https?):\/\/(?:[^\s/?#]*@)?([^\s/?#]+)/i.exec(stderr);
  if (!url) return undefined;
  const scheme = url[1].toLowerCase();
  const host = url[2].replace(/:$/, '');
  return /:\d+$/.test(host) ? host : `${host}:${DEFAULT_PORTS[scheme]}`;
}

/** Lines that say nothing about the cause. */
const NOISE =
  /^(?:Last message repeated|To ignore this, add a trailing|Conversion failed!|Exiting normally|frame=|video:|Stream mapping:|Press \[q\]|Input #|Output #|\s)/;

/** The last line of stderr that carries information, without ffmpeg's `[component @ 0x...]` prefix. */
export function lastMeaningfulLine(stderr: string): string | null {
  const lines = stderr
    .split(/[\r\n]+/)
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '' && !NOISE.test(line));
  const last = lines.at(-1);
  return last === undefined ? null : last.replace(/^\[[^\]]+ @ 0x[0-9a-f]+\]\s*/i, '').trim();
}

/**
 * Maps ffmpeg stderr (already redacted) to a precise, human message. Each pattern was checked against the
 * real ffmpeg 5.1 output kept in ffmpeg.spec.ts. The order matters: a TLS read that timed out is a timeout,
 * and an RTSP server that never answers only says "Invalid data found" once ffmpeg's I/O timeout passed, so
 * that text is a timeout when it came after (nearly) the whole timeout, and "not a video stream" otherwise.
 */
export function classifyFailure(
  stderr: string,
  context: FailureContext = {},
): { kind: FailureKind; message: string } {
  const host = context.host ?? hostFromStderr(stderr) ?? 'the camera';
  const within = context.timeoutMs !== undefined ? ` within ${seconds(context.timeoutMs)}` : '';
  const line = lastMeaningfulLine(stderr);
  const detail = (text: string | null | undefined) => (text ? ` (${text})` : '');

  if (/\bspawn\b.*\bENOENT\b/.test(stderr))
    return { kind: 'ffmpeg_missing', message: FFMPEG_MISSING_MESSAGE };

  if (/\b401 Unauthorized\b|\(authorization failed\)/i.test(stderr)) {
    const message =
      context.hasCredentials === false
        ? 'Authentication failed: the camera requires a username and password (401 Unauthorized)'
        : 'Authentication failed: the camera rejected the username or password (401 Unauthorized)';
    return { kind: 'auth_failed', message };
  }
  if (/\b403 Forbidden\b|\(access denied\)/i.test(stderr))
    return {
      kind: 'auth_failed',
      message: 'Access denied: the camera refused this user (403 Forbidden)',
    };
  if (/\b404 Not Found\b/i.test(stderr))
    return {
      kind: 'not_found',
      message: `Stream not found (404): check the path; ${host} has no stream there`,
    };

  const resolve = /Failed to resolve hostname (\S+): ([^\r\n]+)/.exec(stderr);
  if (resolve)
    return { kind: 'host_not_found', message: `Host not found: ${resolve[1]}${detail(resolve[2])}` };

  const device = /Cannot open video device (\S+): ([^\r\n]+)/.exec(stderr);
  if (device) {
    const [, path, reason] = device;
    if (/No such file or directory/i.test(reason))
      return { kind: 'device_not_found', message: `Device not found: ${path}` };
    if (/Permission denied/i.test(reason))
      return {
        kind: 'unknown',
        message: `Permission denied: ${path} (the service user needs to be in the video group)`,
      };
    if (/busy/i.test(reason))
      return { kind: 'unknown', message: `Device busy: ${path} is in use by another program` };
    return { kind: 'unknown', message: `Cannot open ${path}${detail(reason)}` };
  }
  const notCapture = /^(\/dev\/\S+): Inappropriate ioctl for device/m.exec(stderr);
  if (notCapture)
    return { kind: 'device_not_found', message: `Not a video capture device: ${notCapture[1]}` };

  if (/Connection refused/i.test(stderr))
    return { kind: 'refused', message: `Connection refused by ${host}` };
  if (/Connection timed out|Operation timed out|\bETIMEDOUT\b/i.test(stderr))
    return { kind: 'timeout', message: `Connection timed out: no answer from ${host}${within}` };

  if (/\[tls @|\bTLS\b|GnuTLS|SSL/.test(stderr)) {
    const reason = /End of file/.test(stderr)
      ? 'the server closed the connection'
      : (/An unexpected TLS packet was received\.?|[^\r\n]*(?:certificate|handshake)[^\r\n]*/i.exec(
          stderr,
        )?.[0] ?? line);
    return {
      kind: 'tls',
      message: `TLS handshake failed with ${host}${detail(reason)}; check that the camera speaks rtsps/https on this port`,
    };
  }

  if (/matches no streams|does not contain any stream|no video stream/i.test(stderr))
    return { kind: 'not_video', message: `Not a video stream: ${host} sent no video track` };
  if (/Could not find codec parameters|unspecified size/i.test(stderr))
    return {
      kind: 'not_video',
      message: `Not a video stream: ${host} sent no decodable video${detail(line)}`,
    };
  if (/Invalid data found when processing input/i.test(stderr)) {
    const silent =
      context.timeoutMs !== undefined &&
      context.elapsedMs !== undefined &&
      context.elapsedMs >= context.timeoutMs * 0.9;
    if (silent) return { kind: 'timeout', message: `Connection timed out: no answer from ${host}${within}` };
    return {
      kind: 'not_video',
      message: `Not a video stream: ${host} answered, but not with video ffmpeg can read (a web page, or the wrong protocol or port?)`,
    };
  }

  if (/Network is unreachable|No route to host|Host is unreachable/i.test(stderr))
    return { kind: 'unknown', message: `Host unreachable: no network route to ${host}${detail(line)}` };
  if (/Connection reset by peer|End of file/i.test(stderr))
    return { kind: 'unknown', message: `Connection closed by ${host}${detail(line)}` };
  const httpError = /HTTP error (5\d\d[^\r\n]*)/.exec(stderr) ?? /Server returned (5XX[^\r\n]*)/.exec(stderr);
  if (httpError)
    return { kind: 'unknown', message: `The camera answered with a server error${detail(httpError[1])}` };

  return { kind: 'unknown', message: line ?? 'ffmpeg stopped without an error message' };
}

export interface StreamInfo {
  codec: string;
  width: number;
  height: number;
  fps: number | null;
}

/** A number as ffmpeg prints rates: `15`, `29.97`, `90k`. */
function ffmpegNumber(text: string): number {
  return text.endsWith('k') ? Number(text.slice(0, -1)) * 1000 : Number(text);
}

/**
 * Parses `-loglevel info` stderr ("Stream #0:0: Video: h264 (Constrained Baseline), yuv420p(progressive),
 * 640x360, 15 fps, 15 tbr, 90k tbn") for the first video stream of the input (the output section that
 * follows describes ffmpeg's own encoder). `fps` is null when ffmpeg prints no `fps` (only a `tbr` guess).
 */
export function parseStreamInfo(stderr: string): StreamInfo | null {
  const outputAt = stderr.search(/^(?:Output #\d|Stream mapping:)/m);
  const input = outputAt >= 0 ? stderr.slice(0, outputAt) : stderr;
  const match = /^\s*Stream #\d+:\d+[^:\n]*: Video: ([^\s,]+)([^\n]*)$/m.exec(input);
  if (!match) return null;
  const [, codec, rest] = match;
  const size = /(?:^|[\s,])(\d{1,5})x(\d{1,5})(?=[\s,[]|$)/.exec(rest);
  if (!size) return null;
  const fps = /,\s*(\d+(?:\.\d+)?k?) fps\b/.exec(rest);
  return {
    codec,
    width: Number(size[1]),
    height: Number(size[2]),
    fps: fps ? ffmpegNumber(fps[1]) : null,
  };
}

/** ffmpeg's demuxer for the input (`rtsp`, `mpjpeg`, `jpeg_pipe`, ...), from the `Input #0, <name>, from` line. */
export function parseInputFormat(stderr: string): string | null {
  return /^Input #\d+, ([^,]+(?:,[^,\s]+)*), from /m.exec(stderr)?.[1] ?? null;
}

/** Demuxers that report 25 fps whatever the camera sends: their rate is not worth showing. */
const INVENTED_RATE_FORMATS = new Set(['mpjpeg', 'jpeg_pipe', 'image2', 'mjpeg']);

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;

/**
 * Splits a byte stream of concatenated JPEGs (image2pipe mjpeg) into whole images. It walks the marker
 * segments instead of looking for the first FFD9 after an FFD8: header segments (quantisation and Huffman
 * tables, EXIF with an embedded thumbnail) may hold those bytes, while in the entropy-coded data a real
 * marker is the only FF not followed by 00 or a restart marker. Handles markers split across chunks; the
 * scan position survives between pushes so a large image arriving in many chunks is scanned once. Bytes
 * before an SOI are dropped, and so is an image (or garbage) that grows past MAX_JPEG_BYTES.
 */
export class JpegFrameSplitter {
  private buffer: Buffer = Buffer.alloc(0);
  /** Where parsing of the image at the start of `buffer` continues. */
  private position = 0;
  /** Whether `position` is inside entropy-coded data (after SOS). */
  private inScan = false;

  constructor(private readonly maxBytes: number = MAX_JPEG_BYTES) {}

  /** Bytes held for an unfinished image. */
  get pendingBytes(): number {
    return this.buffer.length;
  }

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const images: Buffer[] = [];
    for (;;) {
      if (this.position === 0 && !this.alignToStart()) break;
      const end = this.findEnd();
      if (end === 'incomplete') break;
      if (end === 'corrupt') {
        this.restartAfter(1);
        continue;
      }
      images.push(Buffer.from(this.buffer.subarray(0, end)));
      this.restartAfter(end);
    }
    if (this.buffer.length > this.maxBytes) this.restartAfter(this.buffer.length);
    return images;
  }

  private restartAfter(offset: number): void {
    this.buffer = this.buffer.subarray(offset);
    this.position = 0;
    this.inScan = false;
  }

  /** Drops bytes before the next SOI; false when there is none yet (a trailing FF is kept). */
  private alignToStart(): boolean {
    const buffer = this.buffer;
    let index = buffer.indexOf(0xff);
    while (index >= 0 && index + 1 < buffer.length && buffer[index + 1] !== SOI) {
      index = buffer.indexOf(0xff, index + 1);
    }
    if (index < 0) {
      this.buffer = Buffer.alloc(0);
      return false;
    }
    this.buffer = buffer.subarray(index);
    if (this.buffer.length < 2) return false;
    this.position = 2;
    return true;
  }

  /** Offset just past the EOI of the image at the start of the buffer. */
  private findEnd(): number | 'incomplete' | 'corrupt' {
    const buffer = this.buffer;
    let pos = this.position;
    for (;;) {
      if (this.inScan) {
        // Entropy-coded data: FF 00 is a stuffed FF, FF D0..D7 a restart marker; any other FF starts a marker.
        for (;;) {
          const ff = buffer.indexOf(0xff, pos);
          if (ff < 0 || ff + 1 >= buffer.length) {
            this.position = ff < 0 ? buffer.length : ff;
            return 'incomplete';
          }
          const next = buffer[ff + 1];
          if (next === 0x00 || (next >= 0xd0 && next <= 0xd7) || next === 0xff) {
            pos = next === 0xff ? ff + 1 : ff + 2;
            continue;
          }
          pos = ff;
          this.inScan = false;
          break;
        }
      }
      if (pos + 2 > buffer.length) {
        this.position = pos;
        return 'incomplete';
      }
      if (buffer[pos] !== 0xff) return 'corrupt';
      const marker = buffer[pos + 1];
      if (marker === 0xff) {
        pos += 1; // fill byte before a marker
        continue;
      }
      if (marker === EOI) return pos + 2;
      if (marker === SOI || marker === 0x00) return 'corrupt';
      if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
        pos += 2;
        continue;
      }
      if (pos + 4 > buffer.length) {
        this.position = pos;
        return 'incomplete';
      }
      const length = buffer.readUInt16BE(pos + 2);
      if (length < 2) return 'corrupt';
      if (pos + 2 + length > buffer.length) {
        this.position = pos;
        return 'incomplete';
      }
      pos += 2 + length;
      if (marker === SOS) this.inScan = true;
    }
  }
}

export interface CameraTestResult {
  success: boolean;
  message: string;
  /** "640x360" */
  resolution: string | null;
  fps: number | null;
  codec: string | null;
  /** Time to the first decoded frame. */
  latency_ms: number | null;
  /** data:image/jpeg;base64,... */
  thumbnail: string | null;
}

/** stderr kept for classification: the start (stream info) and the end (the error). */
const STDERR_HEAD_BYTES = 64 * 1024;
const STDERR_TAIL_BYTES = 16 * 1024;

class BoundedText {
  private head = '';
  private tail = '';
  private truncated = false;

  append(text: string): void {
    if (this.head.length < STDERR_HEAD_BYTES) {
      const room = STDERR_HEAD_BYTES - this.head.length;
      this.head += text.slice(0, room);
      text = text.slice(room);
    }
    if (text === '') return;
    this.tail += text;
    if (this.tail.length > STDERR_TAIL_BYTES) {
      this.tail = this.tail.slice(-STDERR_TAIL_BYTES);
      this.truncated = true;
    }
  }

  toString(): string {
    return this.truncated ? `${this.head}\n[...]\n${this.tail}` : this.head + this.tail;
  }
}

function failure(message: string): CameraTestResult {
  return {
    success: false,
    message,
    resolution: null,
    fps: null,
    codec: null,
    latency_ms: null,
    thumbnail: null,
  };
}

/** Once the JPEG is in, ffmpeg gets this long to exit by itself before it is killed. */
const EXIT_GRACE_MS = 1000;

/**
 * One ffmpeg run (spawn, no shell): connects, reads the stream info, decodes ONE frame as a JPEG thumbnail
 * (at most THUMBNAIL_MAX_WIDTH wide). ffmpeg is killed after `timeoutMs` (default 12 s), which bounds the
 * answer even when a server accepts the connection and then says nothing. Never throws for camera problems;
 * ffmpeg missing → "ffmpeg is not installed on the server". The promise settles only after the child has
 * exited, and the kill timer runs whether or not anyone still awaits it, so no ffmpeg outlives the test.
 * Messages never contain credentials. `ffmpegPath` overrides the binary (default: `ffmpeg` on the PATH).
 */
export async function testStream(
  source: StreamSource,
  options: { timeoutMs?: number; ioTimeoutMs?: number; ffmpegPath?: string } = {},
): Promise<CameraTestResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS;
  const ioTimeoutMs = options.ioTimeoutMs ?? Math.min(DEFAULT_IO_TIMEOUT_MS, timeoutMs);
  const address = sourceAddress(source);
  const redact = (text: string) => redactSecrets(text, source);

  let args: string[];
  try {
    args = testArgs(source, { ioTimeoutMs });
  } catch (error) {
    return failure(redact(error instanceof Error ? error.message : String(error)));
  }

  return new Promise<CameraTestResult>((resolve) => {
    const started = performance.now();
    const stderr = new BoundedText();
    const splitter = new JpegFrameSplitter();
    let jpeg: Buffer | null = null;
    let latencyMs: number | null = null;
    let timedOut = false;
    let settled = false;
    let child: ChildProcess;

    const timers: NodeJS.Timeout[] = [];
    const settle = (result: CameraTestResult) => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      resolve(result);
    };
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };

    try {
      child = spawn(options.ffmpegPath ?? FFMPEG_BINARY, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (error) {
      settle(failure(redact(error instanceof Error ? error.message : String(error))));
      return;
    }

    timers.push(
      setTimeout(() => {
        timedOut = true;
        kill();
      }, timeoutMs),
    );

    child.stdout?.on('data', (chunk: Buffer) => {
      if (jpeg) return;
      latencyMs ??= Math.round(performance.now() - started);
      const images = splitter.push(chunk);
      if (images.length > 0) {
        jpeg = images[0];
        timers.push(setTimeout(kill, EXIT_GRACE_MS));
      }
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => stderr.append(text));

    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') {
        settle(failure(FFMPEG_MISSING_MESSAGE));
        return;
      }
      // A failed kill or pipe error: the process still ends through the timer or by itself.
      stderr.append(`\n${error.message}\n`);
    });

    child.on('close', () => {
      const elapsedMs = performance.now() - started;
      const text = redact(stderr.toString());
      const info = parseStreamInfo(text);
      if (jpeg) {
        const format = parseInputFormat(text);
        const fps = info && !(format && INVENTED_RATE_FORMATS.has(format)) ? info.fps : null;
        const resolution = info ? `${info.width}x${info.height}` : null;
        const described = [info?.codec, resolution, fps !== null ? `${fps} fps` : null]
          .filter(Boolean)
          .join(' ');
        settle({
          success: true,
          message: `Connected to ${redact(address)}${described ? `: ${described}` : ''}, first frame after ${latencyMs} ms`,
          resolution,
          fps,
          codec: info?.codec ?? null,
          latency_ms: latencyMs,
          thumbnail: `data:image/jpeg;base64,${jpeg.toString('base64')}`,
        });
        return;
      }
      const context: FailureContext = {
        host: redact(address),
        timeoutMs: ioTimeoutMs,
        elapsedMs,
        hasCredentials: Boolean(source.username || source.password),
      };
      const classified = classifyFailure(text, context);
      if (timedOut && (classified.kind === 'unknown' || info)) {
        // Our own kill: ffmpeg's last words are about being stopped, not about the camera.
        const message = info
          ? `Timed out: connected to ${context.host} (${info.codec} ${info.width}x${info.height}) but no frame was decoded within ${seconds(timeoutMs)}`
          : `Connection timed out: no video from ${context.host} within ${seconds(timeoutMs)}`;
        settle(failure(message));
        return;
      }
      settle(failure(redact(classified.message)));
    });
  });
}
