import {
  ANALYSIS_HEIGHT,
  ANALYSIS_WIDTH,
  captureArgs,
  classifyFailure,
  FFMPEG_BINARY,
  FFMPEG_MISSING_MESSAGE,
  inputArgs,
  JpegFrameSplitter,
  lastMeaningfulLine,
  MAX_JPEG_BYTES,
  MAX_JPEG_WIDTH,
  parseInputFormat,
  parseStreamInfo,
  redactSecrets,
  sourceAddress,
  StreamSource,
  testArgs,
  testStream,
  urlWithCredentials,
} from './ffmpeg';

const PASSWORD = 'p@ss:w/rd%';
const ENCODED_PASSWORD = 'p%40ss%3Aw%2Frd%25';

const none = { url: null, device: null, username: null, password: null };
const rtsp: StreamSource = {
  ...none,
  sourceType: 'rtsp',
  url: 'rtsp://127.0.0.1:8554/live?channel=1&subtype=0',
  username: 'admin',
  password: PASSWORD,
};
const mjpeg: StreamSource = { ...none, sourceType: 'mjpeg', url: 'https://cam.local/video.mjpg' };
const usb: StreamSource = { ...none, sourceType: 'usb', device: '/dev/video0' };

/** The value following `flag` in an argv. */
const after = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

/**
 * stderr of Debian's ffmpeg 5.1.9, captured from real servers on 127.0.0.1 (a GStreamer RTSP server with and
 * without basic auth, Python HTTP servers, a TCP server that never answers, one that closes at once, closed
 * ports, `unshare -n` for an unreachable network). `error` is `-loglevel error` (the capture), `info` is
 * `-loglevel info` (the test); where the two differ both are kept.
 */
const STDERR = {
  rtsp401: `[rtsp @ 0x5651302d49c0] method DESCRIBE failed: 401 Unauthorized
rtsp://127.0.0.1:18555/live: Server returned 401 Unauthorized (authorization failed)
`,
  rtsp401WithCredentials: `[rtsp @ 0x5616371289c0] method DESCRIBE failed: 401 Unauthorized
rtsp://admin:wrong@127.0.0.1:18555/live: Server returned 401 Unauthorized (authorization failed)
`,
  http401Info: `[http @ 0x55edf41b51c0] HTTP error 401 Unauthorized
http://127.0.0.1:18080/auth: Server returned 401 Unauthorized (authorization failed)
`,
  http401Error: `http://admin:wrong@127.0.0.1:18080/auth: Server returned 401 Unauthorized (authorization failed)
`,
  http403Info: `[http @ 0x5581922551c0] HTTP error 403 Forbidden
http://127.0.0.1:18080/403: Server returned 403 Forbidden (access denied)
`,
  rtsp404: `[rtsp @ 0x559dc1ed29c0] method DESCRIBE failed: 404 Not Found
rtsp://127.0.0.1:18554/nope: Server returned 404 Not Found
`,
  http404Error: `http://127.0.0.1:18080/nope: Server returned 404 Not Found
`,
  http500Info: `[http @ 0x56433d2ca1c0] HTTP error 500 Internal Server Error
http://127.0.0.1:18080/500: Server returned 5XX Server Error reply
`,
  http500Error: `http://127.0.0.1:18080/500: Server returned 5XX Server Error reply
`,
  rtspRefused: `[tcp @ 0x55f2561da880] Connection to tcp://127.0.0.1:18556?timeout=5000000 failed: Connection refused
rtsp://127.0.0.1:18556/live: Connection refused
`,
  httpRefused: `[tcp @ 0x55cded16e080] Connection to tcp://127.0.0.1:18081 failed: Connection refused
http://127.0.0.1:18081/x: Connection refused
`,
  // A TCP server that accepts and never answers: RTSP says only this, after the 5 s -timeout (5.21 s).
  rtspSilent: `rtsp://127.0.0.1:18099/live: Invalid data found when processing input
`,
  httpSilent: `http://127.0.0.1:18099/x: Connection timed out
`,
  httpsSilent: `[tls @ 0x5605a5446080] Error in the pull function.
[tls @ 0x5605a5446080] IO error: Connection timed out
https://127.0.0.1:18099/x: Connection timed out
`,
  // An RTSP stream that stalls mid-capture (server SIGSTOPped), 3 s -timeout.
  rtspStalled: `rtsp://127.0.0.1:18557/live: Connection timed out
    Last message repeated 2 times
`,
  // HTTP 200 with Content-Type text/html.
  httpHtml: `http://127.0.0.1:18080/html: Invalid data found when processing input
`,
  // An RTSP URL pointing at the HTTP server: answered fast, but not RTSP.
  rtspOnHttp: `rtsp://127.0.0.1:18080/live: Invalid data found when processing input
`,
  rtspHostNotFound: `[tcp @ 0x5648707c1880] Failed to resolve hostname camera.invalid: Name or service not known
rtsp://camera.invalid:554/live: Input/output error
`,
  rtspsOnPlainRtsp: `[tls @ 0x559bb6d5c880] An unexpected TLS packet was received.
rtsps://127.0.0.1:18554/live: Input/output error
`,
  rtspsClosed: `[tls @ 0x55d63eea08c0] Error in the pull function.
[tls @ 0x55d63eea08c0] IO error: End of file
rtsps://127.0.0.1:18097/live: End of file
`,
  httpClosed: `http://127.0.0.1:18097/x: Connection reset by peer
`,
  usbMissing: `[video4linux2,v4l2 @ 0x5611c9a7b980] Cannot open video device /dev/video99: No such file or directory
/dev/video99: No such file or directory
`,
  usbNotCapture: `[video4linux2,v4l2 @ 0x55b6ddec9980] ioctl(VIDIOC_QUERYCAP): Inappropriate ioctl for device
/dev/null: Inappropriate ioctl for device
`,
  rtspAudioOnlyInfo: `Input #0, rtsp, from 'rtsp://127.0.0.1:18554/audio':
  Metadata:
    title           : Session streamed with GStreamer
    comment         : rtsp-server
  Duration: N/A, start: 0.000000, bitrate: 64 kb/s
  Stream #0:0: Audio: pcm_alaw, 8000 Hz, mono, s16, 64 kb/s
Stream map '0:v:0' matches no streams.
To ignore this, add a trailing '?' to the map.
`,
  rtspAudioOnlyCapture: `Stream specifier ':v:0' in filtergraph description [0:v:0]split=2[a][b] matches no streams.
`,
  unreachable: `[tcp @ 0x557f56c688c0] Connection to tcp://127.0.0.1:18554?timeout=5000000 failed: Network is unreachable
rtsp://127.0.0.1:18554/live: Network is unreachable
`,
};

/** Full `-loglevel info` stderr of successful test runs (testArgs), input and output sections. */
const SUCCESS_MPJPEG = `Input #0, mpjpeg, from 'http://127.0.0.1:18080/mjpg':
  Duration: N/A, start: 1795329243.200000, bitrate: N/A
  Stream #0:0: Video: mjpeg (Baseline), yuvj420p(pc, bt470bg/unknown/unknown), 320x240 [SAR 1:1 DAR 4:3], 25 tbr, 25 tbn
Stream mapping:
  Stream #0:0 -> #0:0 (mjpeg (native) -> mjpeg (native))
Output #0, image2pipe, to 'pipe:1':
  Metadata:
    encoder         : Lavf59.27.100
  Stream #0:0: Video: mjpeg, yuvj420p(pc, bt470bg/unknown/unknown, progressive), 320x240 [SAR 1:1 DAR 4:3], q=2-31, 200 kb/s, 25 fps, 25 tbn
    Metadata:
      encoder         : Lavc59.37.100 mjpeg
frame=    1 fps=0.0 q=5.0 Lsize=       9kB time=00:00:00.04 bitrate=1794.2kbits/s speed=5.66x
video:9kB audio:0kB subtitle:0kB other streams:0kB global headers:0kB muxing overhead: 0.000000%
`;
const SUCCESS_RTSP_AUDIO_FIRST = `Input #0, rtsp, from 'rtsp://127.0.0.1:18554/av':
  Metadata:
    title           : Session streamed with GStreamer
    comment         : rtsp-server
  Duration: N/A, start: 0.000000, bitrate: N/A
  Stream #0:0: Audio: pcm_alaw, 8000 Hz, mono, s16, 64 kb/s
  Stream #0:1: Video: h264 (Constrained Baseline), yuv420p(tv, smpte170m, progressive), 640x360 [SAR 1:1 DAR 16:9], 15 fps, 15 tbr, 90k tbn
Stream mapping:
  Stream #0:1 -> #0:0 (h264 (native) -> mjpeg (native))
[swscaler @ 0x5570c0c54080] [swscaler @ 0x5570c0c43600] deprecated pixel format used, make sure you did set range correctly
Output #0, image2pipe, to 'pipe:1':
  Stream #0:0: Video: mjpeg, yuvj420p(pc, smpte170m, progressive), 1280x720 [SAR 1:1 DAR 16:9], q=2-31, 200 kb/s, 25 fps, 15 tbn
`;

describe('inputArgs', () => {
  it('reads RTSP over TCP with a socket timeout in microseconds and the credentials encoded in the URL', () => {
    expect(inputArgs(rtsp, { ioTimeoutMs: 5000 })).toEqual([
      '-rtsp_transport',
      'tcp',
      '-timeout',
      '5000000',
      '-i',
      `rtsp://admin:${ENCODED_PASSWORD}@127.0.0.1:8554/live?channel=1&subtype=0`,
    ]);
  });

  it('treats rtsps like rtsp', () => {
    const args = inputArgs(
      { ...rtsp, url: 'rtsps://[::1]:322/s', username: null, password: null },
      {
        ioTimeoutMs: 2500,
      },
    );
    expect(args).toEqual(['-rtsp_transport', 'tcp', '-timeout', '2500000', '-i', 'rtsps://[::1]:322/s']);
  });

  it('lets ffmpeg detect the MJPEG flavour, with wall-clock timestamps and a minimal probe', () => {
    expect(inputArgs(mjpeg, { ioTimeoutMs: 5000, frameRate: 5 })).toEqual([
      '-timeout',
      '5000000',
      '-use_wallclock_as_timestamps',
      '1',
      '-probesize',
      '32',
      '-i',
      'https://cam.local/video.mjpg',
    ]);
  });

  it('opens a USB camera through v4l2 at the requested rate, without credentials or network options', () => {
    expect(inputArgs(usb, { ioTimeoutMs: 5000, frameRate: 10 })).toEqual([
      '-f',
      'v4l2',
      '-framerate',
      '10',
      '-i',
      '/dev/video0',
    ]);
    expect(inputArgs(usb, { ioTimeoutMs: 5000 })).toEqual(['-f', 'v4l2', '-i', '/dev/video0']);
  });

  it('refuses a source without its url or device', () => {
    expect(() => inputArgs({ ...rtsp, url: null }, { ioTimeoutMs: 1 })).toThrow('needs a url');
    expect(() => inputArgs({ ...mjpeg, url: null }, { ioTimeoutMs: 1 })).toThrow('needs a url');
    expect(() => inputArgs({ ...usb, device: null }, { ioTimeoutMs: 1 })).toThrow('needs a device');
  });
});

describe('urlWithCredentials', () => {
  it('percent-encodes every special character of the username and password', () => {
    expect(
      urlWithCredentials('rtsp://cam:554/a', { username: "o'brien (cam)", password: 'a b!*+#?&=' }),
    ).toBe('rtsp://o%27brien%20%28cam%29:a%20b%21%2A%2B%23%3F%26%3D@cam:554/a');
    expect(urlWithCredentials('http://cam/x', { username: 'ü', password: PASSWORD })).toBe(
      `http://%C3%BC:${ENCODED_PASSWORD}@cam/x`,
    );
  });

  it('leaves the URL as typed without credentials, and supports a password without username', () => {
    expect(urlWithCredentials('rtsp://Cam.Local/Path%20x?a=b', { username: null, password: null })).toBe(
      'rtsp://Cam.Local/Path%20x?a=b',
    );
    expect(urlWithCredentials('rtsp://cam/a', { username: null, password: 'pw' })).toBe('rtsp://:pw@cam/a');
    expect(urlWithCredentials('rtsp://cam/a', { username: 'viewer', password: null })).toBe(
      'rtsp://viewer@cam/a',
    );
  });

  it('replaces userinfo already in the URL rather than adding a second one', () => {
    expect(urlWithCredentials('rtsp://old:secret@cam/a', { username: 'new', password: 'pw' })).toBe(
      'rtsp://new:pw@cam/a',
    );
  });
});

describe('sourceAddress', () => {
  it('names host and port, filling in the scheme default, or the device', () => {
    expect(sourceAddress(rtsp)).toBe('127.0.0.1:8554');
    expect(sourceAddress({ ...rtsp, url: 'rtsp://cam.local/live' })).toBe('cam.local:554');
    expect(sourceAddress({ ...rtsp, url: 'rtsps://cam.local/live' })).toBe('cam.local:322');
    expect(sourceAddress(mjpeg)).toBe('cam.local:443');
    expect(sourceAddress({ ...mjpeg, url: 'http://[::1]/x' })).toBe('[::1]:80');
    expect(sourceAddress({ ...mjpeg, url: 'http://[::1]:8080/x' })).toBe('[::1]:8080');
    expect(sourceAddress(usb)).toBe('/dev/video0');
  });
});

describe('captureArgs', () => {
  const args = captureArgs(rtsp, 5, { ioTimeoutMs: 3000 });

  it('is a plain argv for spawn: one element per argument, nothing a shell would have to parse', () => {
    expect(FFMPEG_BINARY).toBe('ffmpeg');
    expect(args.slice(0, 4)).toEqual(['-nostdin', '-hide_banner', '-loglevel', 'error']);
    // The URL with its encoded password is a single argument, unquoted.
    expect(args).toContain(`rtsp://admin:${ENCODED_PASSWORD}@127.0.0.1:8554/live?channel=1&subtype=0`);
    expect(args.filter((arg) => arg.startsWith("'") || arg.startsWith('"'))).toEqual([]);
  });

  it('reads the source over TCP with the I/O timeout', () => {
    expect(after(args, '-rtsp_transport')).toBe('tcp');
    expect(after(args, '-timeout')).toBe('3000000');
    expect(after(captureArgs(rtsp, 5), '-timeout')).toBe('5000000');
  });

  it('decodes once and splits into gray analysis frames on stdout and colour JPEGs on fd 3', () => {
    const graph = after(args, '-filter_complex');
    expect(graph.startsWith('[0:v:0]select=')).toBe(true);
    expect(graph).toContain('split=2[analysis][colour]');
    expect(graph).toContain(
      `[analysis]scale=${ANALYSIS_WIDTH}:${ANALYSIS_HEIGHT}:flags=area,format=gray[gray]`,
    );
    expect(graph).toContain(`scale='min(${MAX_JPEG_WIDTH},iw)':'min(${MAX_JPEG_WIDTH},ih)'`);
    expect(graph).toContain('force_original_aspect_ratio=decrease');
    expect(graph).toContain('*5+0.5');

    const gray = args.slice(args.indexOf('[gray]') - 1, args.indexOf('pipe:1') + 1);
    expect(gray).toEqual([
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
    ]);
    const jpeg = args.slice(args.indexOf('[jpeg]') - 1);
    expect(jpeg).toEqual([
      '-map',
      '[jpeg]',
      '-fps_mode',
      'passthrough',
      '-c:v',
      'mjpeg',
      '-q:v',
      '5',
      '-f',
      'image2pipe',
      '-flush_packets',
      '1',
      'pipe:3',
    ]);
  });

  it('caps each source type at the frame rate, USB also at the device', () => {
    expect(after(captureArgs(usb, 12), '-framerate')).toBe('12');
    expect(after(captureArgs(mjpeg, 2), '-filter_complex')).toContain('*2+0.5');
  });

  it('refuses a frame rate that is not a positive number', () => {
    for (const rate of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => captureArgs(rtsp, rate)).toThrow(RangeError);
  });
});

describe('testArgs', () => {
  it('logs at info level for the stream line and writes one scaled JPEG to stdout', () => {
    const args = testArgs(rtsp);
    expect(after(args, '-loglevel')).toBe('info');
    expect(after(args, '-map')).toBe('0:v:0');
    expect(after(args, '-frames:v')).toBe('1');
    expect(after(args, '-vf')).toBe("scale='min(640,iw)':-2");
    expect(args.at(-1)).toBe('pipe:1');
  });
});

describe('redactSecrets', () => {
  const credentials = { username: 'admin', password: PASSWORD };

  it('removes the password raw and percent-encoded, in either hex case', () => {
    const text = `raw ${PASSWORD} encoded ${ENCODED_PASSWORD} lower ${ENCODED_PASSWORD.toLowerCase()} mixed p%40ss:w%2frd%`;
    const redacted = redactSecrets(text, credentials);
    expect(redacted).toBe('raw *** encoded *** lower *** mixed ***');
  });

  it('removes userinfo from URLs, even without knowing the password', () => {
    expect(redactSecrets(STDERR.rtsp401WithCredentials, { username: null, password: null })).toBe(
      `[rtsp @ 0x5616371289c0] method DESCRIBE failed: 401 Unauthorized
rtsp://***@127.0.0.1:18555/live: Server returned 401 Unauthorized (authorization failed)
`,
    );
    const line = `Input #0, rtsp, from 'rtsp://admin:${ENCODED_PASSWORD}@127.0.0.1:18555/live':`;
    expect(redactSecrets(line, credentials)).toBe("Input #0, rtsp, from 'rtsp://***@127.0.0.1:18555/live':");
  });

  it('removes an unencoded password with @ : / from a URL, keeping the host', () => {
    const redacted = redactSecrets(`http://admin:${PASSWORD}@cam:80/x failed`, credentials);
    expect(redacted).toBe('http://***@cam:80/x failed');
  });

  it('handles non-ASCII passwords and spaces written as + or %20', () => {
    const source = { username: 'u', password: 'pä ss' };
    expect(redactSecrets('a pä ss b p%C3%A4%20ss c p%c3%a4+ss d', source)).toBe('a *** b *** c *** d');
  });

  it('treats regular-expression characters in the password literally', () => {
    expect(redactSecrets('x a.b*c y aXbbc', { username: null, password: 'a.b*c' })).toBe('x *** y aXbbc');
  });

  it('redacts a very short password only where it stands alone, so messages stay readable', () => {
    const source = { username: null, password: 'e' };
    expect(redactSecrets('Connection refused, password e', source)).toBe('Connection refused, password ***');
  });

  it('leaves text without secrets unchanged', () => {
    expect(redactSecrets(STDERR.rtspRefused, credentials)).toBe(STDERR.rtspRefused);
  });
});

describe('classifyFailure on real ffmpeg 5.1 stderr', () => {
  it('recognises a rejected password, and a missing one', () => {
    const wrong = classifyFailure(
      redactSecrets(STDERR.rtsp401WithCredentials, { username: 'admin', password: 'wrong' }),
    );
    expect(wrong).toEqual({
      kind: 'auth_failed',
      message: 'Authentication failed: the camera rejected the username or password (401 Unauthorized)',
    });
    expect(classifyFailure(STDERR.rtsp401, { hasCredentials: false })).toEqual({
      kind: 'auth_failed',
      message: 'Authentication failed: the camera requires a username and password (401 Unauthorized)',
    });
    for (const stderr of [STDERR.http401Info, STDERR.http401Error])
      expect(classifyFailure(stderr).kind).toBe('auth_failed');
    expect(classifyFailure(STDERR.http403Info)).toEqual({
      kind: 'auth_failed',
      message: 'Access denied: the camera refused this user (403 Forbidden)',
    });
  });

  it('recognises a refused connection and names the address', () => {
    expect(classifyFailure(STDERR.rtspRefused)).toEqual({
      kind: 'refused',
      message: 'Connection refused by 127.0.0.1:18556',
    });
    expect(classifyFailure(STDERR.httpRefused, { host: 'cam:81' }).message).toBe(
      'Connection refused by cam:81',
    );
  });

  it('recognises a timeout, including a silent RTSP server that only reports invalid data', () => {
    expect(classifyFailure(STDERR.httpSilent, { timeoutMs: 5000 })).toEqual({
      kind: 'timeout',
      message: 'Connection timed out: no answer from 127.0.0.1:18099 within 5 s',
    });
    expect(classifyFailure(STDERR.httpsSilent, { timeoutMs: 2500 }).message).toBe(
      'Connection timed out: no answer from 127.0.0.1:18099 within 2.5 s',
    );
    expect(classifyFailure(STDERR.rtspStalled).kind).toBe('timeout');
    expect(
      classifyFailure(STDERR.rtspSilent, { host: '127.0.0.1:18099', timeoutMs: 5000, elapsedMs: 5211 }),
    ).toEqual({
      kind: 'timeout',
      message: 'Connection timed out: no answer from 127.0.0.1:18099 within 5 s',
    });
  });

  it('recognises an answer that is not video: a web page, the wrong protocol, no video track', () => {
    const html = classifyFailure(STDERR.httpHtml, { timeoutMs: 5000, elapsedMs: 90 });
    expect(html.kind).toBe('not_video');
    expect(html.message).toMatch(/^Not a video stream: 127\.0\.0\.1:18080 answered/);
    expect(classifyFailure(STDERR.rtspOnHttp, { timeoutMs: 5000, elapsedMs: 70 }).kind).toBe('not_video');
    expect(classifyFailure(STDERR.rtspSilent).kind).toBe('not_video'); // no timing known: take the text
    expect(classifyFailure(STDERR.rtspAudioOnlyInfo)).toEqual({
      kind: 'not_video',
      message: 'Not a video stream: 127.0.0.1:18554 sent no video track',
    });
    expect(classifyFailure(STDERR.rtspAudioOnlyCapture, { host: 'cam:554' }).kind).toBe('not_video');
  });

  it('recognises a wrong path', () => {
    expect(classifyFailure(STDERR.rtsp404)).toEqual({
      kind: 'not_found',
      message: 'Stream not found (404): check the path; 127.0.0.1:18554 has no stream there',
    });
    expect(classifyFailure(STDERR.http404Error).kind).toBe('not_found');
  });

  it('recognises an unknown host name', () => {
    expect(classifyFailure(STDERR.rtspHostNotFound)).toEqual({
      kind: 'host_not_found',
      message: 'Host not found: camera.invalid (Name or service not known)',
    });
  });

  it('recognises a missing USB device and a path that is no capture device', () => {
    expect(classifyFailure(STDERR.usbMissing)).toEqual({
      kind: 'device_not_found',
      message: 'Device not found: /dev/video99',
    });
    expect(classifyFailure(STDERR.usbNotCapture)).toEqual({
      kind: 'device_not_found',
      message: 'Not a video capture device: /dev/null',
    });
  });

  it('recognises a TLS failure', () => {
    const plain = classifyFailure(STDERR.rtspsOnPlainRtsp);
    expect(plain.kind).toBe('tls');
    expect(plain.message).toBe(
      'TLS handshake failed with 127.0.0.1:18554 (An unexpected TLS packet was received.); check that the camera speaks rtsps/https on this port',
    );
    expect(classifyFailure(STDERR.rtspsClosed).message).toMatch(
      /^TLS handshake failed with 127\.0\.0\.1:18097 \(the server closed the connection\)/,
    );
  });

  it('recognises that ffmpeg itself is missing', () => {
    expect(classifyFailure('Error: spawn ffmpeg ENOENT')).toEqual({
      kind: 'ffmpeg_missing',
      message: FFMPEG_MISSING_MESSAGE,
    });
  });

  it('gives other failures a precise message, keeping the last meaningful line', () => {
    expect(classifyFailure(STDERR.unreachable)).toEqual({
      kind: 'unknown',
      message:
        'Host unreachable: no network route to 127.0.0.1:18554 (rtsp://127.0.0.1:18554/live: Network is unreachable)',
    });
    expect(classifyFailure(STDERR.httpClosed).message).toBe(
      'Connection closed by 127.0.0.1:18097 (http://127.0.0.1:18097/x: Connection reset by peer)',
    );
    expect(classifyFailure(STDERR.http500Info).message).toBe(
      'The camera answered with a server error (500 Internal Server Error)',
    );
    expect(classifyFailure(STDERR.http500Error).message).toBe(
      'The camera answered with a server error (5XX Server Error reply)',
    );
    expect(
      classifyFailure(
        '[h264 @ 0x55d] something new\n    Last message repeated 3 times\nConversion failed!\n',
      ),
    ).toEqual({
      kind: 'unknown',
      message: 'something new',
    });
    expect(classifyFailure('')).toEqual({
      kind: 'unknown',
      message: 'ffmpeg stopped without an error message',
    });
  });

  it('never puts the password in a message', () => {
    const raw = `rtsp://admin:${ENCODED_PASSWORD}@127.0.0.1:18555/live: Something odd ${PASSWORD}\n`;
    const { message } = classifyFailure(redactSecrets(raw, { username: 'admin', password: PASSWORD }));
    expect(message).toBe('rtsp://***@127.0.0.1:18555/live: Something odd ***');
  });
});

describe('lastMeaningfulLine', () => {
  it('skips ffmpeg bookkeeping and strips the component prefix', () => {
    expect(lastMeaningfulLine(STDERR.rtspStalled)).toBe('rtsp://127.0.0.1:18557/live: Connection timed out');
    expect(lastMeaningfulLine(STDERR.rtspAudioOnlyInfo)).toBe("Stream map '0:v:0' matches no streams.");
    expect(lastMeaningfulLine('\n\n')).toBeNull();
  });
});

describe('parseStreamInfo', () => {
  const line = (text: string) => `Input #0, x, from 'y':\n${text}\n`;

  it('reads H.264 from an RTSP camera', () => {
    expect(
      parseStreamInfo(
        line(
          '  Stream #0:0: Video: h264 (Constrained Baseline), yuv420p(tv, smpte170m, progressive), 640x360 [SAR 1:1 DAR 16:9], 15 fps, 15 tbr, 90k tbn',
        ),
      ),
    ).toEqual({ codec: 'h264', width: 640, height: 360, fps: 15 });
  });

  it('reads the verbose form with reference frames and coded size', () => {
    expect(
      parseStreamInfo(
        line(
          '  Stream #0:0: Video: h264 (Constrained Baseline), 1 reference frame, yuv420p(tv, smpte170m, progressive, center), 640x360 (640x368) [SAR 1:1 DAR 16:9], 15 fps, 15 tbr, 90k tbn',
        ),
      ),
    ).toEqual({ codec: 'h264', width: 640, height: 360, fps: 15 });
  });

  it('reads HEVC, with fractional rates and container stream ids', () => {
    expect(
      parseStreamInfo(
        line(
          '  Stream #0:0: Video: hevc (Rext), yuv444p12le(tv, bt709), 1280x720 [SAR 1:1 DAR 16:9], 10 fps, 10 tbr, 90k tbn',
        ),
      ),
    ).toEqual({ codec: 'hevc', width: 1280, height: 720, fps: 10 });
    expect(
      parseStreamInfo(
        line(
          '  Stream #0:0[0x100]: Video: hevc (Main) (HEVC / 0x43564548), yuv420p(tv), 704x576 [SAR 1:1 DAR 11:9], 12.50 fps, 12.50 tbr, 90k tbn',
        ),
      ),
    ).toEqual({ codec: 'hevc', width: 704, height: 576, fps: 12.5 });
    expect(
      parseStreamInfo(
        line(
          '  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(progressive), 1920x1080 [SAR 1:1 DAR 16:9], 6116 kb/s, 29.97 fps, 29.97 tbr, 30k tbn (default)',
        ),
      ),
    ).toEqual({ codec: 'h264', width: 1920, height: 1080, fps: 29.97 });
  });

  it('reads MJPEG without fps as fps null', () => {
    expect(parseStreamInfo(SUCCESS_MPJPEG)).toEqual({ codec: 'mjpeg', width: 320, height: 240, fps: null });
  });

  it('takes the first video stream of the input, not an audio stream or our own output', () => {
    expect(parseStreamInfo(SUCCESS_RTSP_AUDIO_FIRST)).toEqual({
      codec: 'h264',
      width: 640,
      height: 360,
      fps: 15,
    });
    expect(parseStreamInfo(STDERR.rtspAudioOnlyInfo)).toBeNull();
    expect(parseStreamInfo(STDERR.rtspRefused)).toBeNull();
  });
});

describe('parseInputFormat', () => {
  it('names the demuxer ffmpeg chose', () => {
    expect(parseInputFormat(SUCCESS_MPJPEG)).toBe('mpjpeg');
    expect(parseInputFormat(SUCCESS_RTSP_AUDIO_FIRST)).toBe('rtsp');
    expect(parseInputFormat("Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'h264.mp4':")).toBe(
      'mov,mp4,m4a,3gp,3g2,mj2',
    );
    expect(parseInputFormat('')).toBeNull();
  });
});

describe('JpegFrameSplitter', () => {
  // A 16x16 JPEG from ffmpeg's mjpeg encoder (image2pipe), 311 bytes.
  const REAL = Buffer.from(
    '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgoKC8oLzc3Nzc3N0E8QUNDQ0FBQUFDQ0NISEhVVVVI' +
      'SEhDQ0hIUFBVVVxfXFdXVVdfX2RkZHh4c3OMjJGsrM//xABmAAEBAQAAAAAAAAAAAAAAAAAFAwcBAQEAAAAAAAAAAAAAAAAAAAAG' +
      'EAABAgUFAQEAAAAAAAAAAAARAQIxABIhAxNBgSJRMnERAAIBBAMBAQAAAAAAAAAAABEBAgBBMSHxBPDBEv/AABEIABAAEAMBIgAC' +
      'EQADEQD/2gAMAwEAAhEDEQA/AMu7q5Ub+7W5WbY9VjrWUHYARMBLOOORIqtKj0RlFqpp0Dt9UG4qIPo5lLszbYIbWjhO9tLzqgnB' +
      'GSJH6XwXyuK//9k=',
    'base64',
  );

  /**
   * A hand-made JPEG whose header segments contain FF D8 / FF D9 bytes (an EXIF-style thumbnail, a table
   * value), and whose entropy data has stuffed FF 00, a restart marker and fill bytes: a splitter that
   * stops at the first FF D9 cuts it in half.
   */
  const TRICKY = Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    Buffer.from([0xff, 0xe1, 0x00, 0x0a, 0xff, 0xd8, 0x01, 0x02, 0xff, 0xd9, 0x03, 0x04]), // APP1 with a "thumbnail"
    Buffer.from([0xff, 0xdb, 0x00, 0x05, 0x00, 0xff, 0xd9]), // DQT whose values include FF D9
    Buffer.from([0xff, 0xda, 0x00, 0x04, 0x01, 0x02]), // SOS header
    Buffer.from([0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56, 0xff, 0xff, 0x00, 0x78]), // entropy-coded data
    Buffer.from([0xff, 0xff, 0xd9]), // fill byte, then EOI
  ]);

  const GARBAGE = Buffer.from([0x00, 0xff, 0x12, 0xd8, 0xff]);
  const STREAM = Buffer.concat([GARBAGE, REAL, TRICKY, REAL]);
  const EXPECTED = [REAL, TRICKY, REAL];

  it('splits a stream in one chunk into whole images', () => {
    expect(new JpegFrameSplitter().push(STREAM)).toEqual(EXPECTED);
  });

  it('gives the same images whichever byte the stream is split at', () => {
    for (let at = 0; at <= STREAM.length; at++) {
      const splitter = new JpegFrameSplitter();
      const images = [...splitter.push(STREAM.subarray(0, at)), ...splitter.push(STREAM.subarray(at))];
      expect(images).toEqual(EXPECTED);
      expect(splitter.pendingBytes).toBe(0);
    }
  });

  it('gives the same images when the stream arrives one byte at a time', () => {
    const splitter = new JpegFrameSplitter();
    const images: Buffer[] = [];
    for (let i = 0; i < STREAM.length; i++) images.push(...splitter.push(STREAM.subarray(i, i + 1)));
    expect(images).toEqual(EXPECTED);
  });

  it('returns copies that do not change when the input buffer is reused', () => {
    const input = Buffer.from(REAL);
    const [image] = new JpegFrameSplitter().push(input);
    input.fill(0);
    expect(image).toEqual(REAL);
  });

  it('keeps an unfinished image until its end arrives', () => {
    const splitter = new JpegFrameSplitter();
    expect(splitter.push(REAL.subarray(0, 200))).toEqual([]);
    expect(splitter.pendingBytes).toBe(200);
    expect(splitter.push(REAL.subarray(200))).toEqual([REAL]);
  });

  it('skips a false start whose header is broken and finds the next image', () => {
    const broken = Buffer.from([0xff, 0xd8, 0x12, 0x34]);
    expect(new JpegFrameSplitter().push(Buffer.concat([broken, REAL]))).toEqual([REAL]);
  });

  it('drops an image that grows past the cap and recovers on the next one', () => {
    const splitter = new JpegFrameSplitter(1000);
    // SOI, then an endless scan: no end marker ever comes.
    expect(
      splitter.push(
        Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xda, 0x00, 0x02]), Buffer.alloc(1500, 7)]),
      ),
    ).toEqual([]);
    expect(splitter.pendingBytes).toBe(0);
    expect(splitter.push(REAL)).toEqual([REAL]);
  });

  it('caps at 16 MiB by default', () => {
    expect(MAX_JPEG_BYTES).toBe(16 * 1024 * 1024);
    const splitter = new JpegFrameSplitter();
    splitter.push(Buffer.from([0xff, 0xd8, 0xff, 0xda, 0x00, 0x02]));
    splitter.push(Buffer.alloc(MAX_JPEG_BYTES - 10, 1));
    expect(splitter.pendingBytes).toBeGreaterThan(MAX_JPEG_BYTES - 10);
    splitter.push(Buffer.alloc(100, 1));
    expect(splitter.pendingBytes).toBe(0);
  });

  it('drops bytes that cannot start an image', () => {
    const splitter = new JpegFrameSplitter();
    expect(splitter.push(Buffer.alloc(4096, 0x41))).toEqual([]);
    expect(splitter.pendingBytes).toBe(0);
  });
});

describe('testStream without a usable ffmpeg run', () => {
  it('says ffmpeg is not installed when the binary cannot be found', async () => {
    const result = await testStream(rtsp, { timeoutMs: 5000, ffmpegPath: '/nonexistent/ffmpeg' });
    expect(result).toEqual({
      success: false,
      message: 'ffmpeg is not installed on the server',
      resolution: null,
      fps: null,
      codec: null,
      latency_ms: null,
      thumbnail: null,
    });
  });

  it('answers with a failure instead of throwing for an incomplete source', async () => {
    const result = await testStream({ ...rtsp, url: null });
    expect(result.success).toBe(false);
    expect(result.message).toBe('An RTSP source needs a url');
  });
});
