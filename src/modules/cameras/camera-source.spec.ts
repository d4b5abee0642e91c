import {
  CameraSource,
  mergeCameraSource,
  URL_CREDENTIALS_MESSAGE,
  urlProblem,
  validateCameraSource,
} from './camera-source';

const CONTROLLER = '3f6e2a1c-9b7d-4e0a-8c5f-1d2e3f4a5b6c';

const empty: Omit<CameraSource, 'source_type'> = {
  url: null,
  username: null,
  has_password: false,
  device: null,
  protect_controller_id: null,
  protect_camera_id: null,
};
const rtsp: CameraSource = {
  ...empty,
  source_type: 'rtsp',
  url: 'rtsp://10.0.0.5:554/live',
  username: 'viewer',
  has_password: true,
};
const usb: CameraSource = { ...empty, source_type: 'usb', device: '/dev/video0' };
const protect: CameraSource = {
  ...empty,
  source_type: 'protect',
  protect_controller_id: CONTROLLER,
  protect_camera_id: 'abc123',
};
const mjpeg: CameraSource = { ...empty, source_type: 'mjpeg', url: 'https://cam.local/video.mjpg' };

const fields = (source: CameraSource) => validateCameraSource(source).map((e) => e.field);

describe('camera source validation', () => {
  it('accepts a complete camera of each source type', () => {
    for (const source of [rtsp, usb, protect, mjpeg]) expect(validateCameraSource(source)).toEqual([]);
    expect(validateCameraSource({ ...rtsp, url: 'RTSPS://[::1]:8554/a?b=c', username: null })).toEqual([]);
  });

  it('requires the fields of the source type', () => {
    expect(validateCameraSource({ ...empty, source_type: 'rtsp' })).toEqual([
      { field: 'body.url', message: 'url is required for source_type rtsp' },
    ]);
    expect(fields({ ...empty, source_type: 'mjpeg' })).toEqual(['body.url']);
    expect(fields({ ...empty, source_type: 'usb' })).toEqual(['body.device']);
    expect(fields({ ...empty, source_type: 'protect' })).toEqual([
      'body.protect_controller_id',
      'body.protect_camera_id',
    ]);
  });

  it('refuses every field of another source type, naming each', () => {
    expect(validateCameraSource({ ...usb, url: 'rtsp://x/y', has_password: true })).toEqual([
      { field: 'body.url', message: 'url is not allowed for source_type usb' },
      { field: 'body.password', message: 'password is not allowed for source_type usb' },
    ]);
    expect(fields({ ...rtsp, device: '/dev/video1', protect_camera_id: 'x' })).toEqual([
      'body.device',
      'body.protect_camera_id',
    ]);
    expect(fields({ ...protect, username: 'u' })).toEqual(['body.username']);
    expect(fields({ ...mjpeg, protect_controller_id: CONTROLLER })).toEqual(['body.protect_controller_id']);
  });

  it('checks the URL scheme per source type', () => {
    expect(urlProblem('http://cam/x', 'rtsp')).toBe(
      'url must start with rtsp:// or rtsps:// for source_type rtsp',
    );
    expect(urlProblem('rtsp://cam/x', 'mjpeg')).toBe(
      'url must start with http:// or https:// for source_type mjpeg',
    );
    expect(urlProblem('cam.local/stream', 'rtsp')).toMatch(/must start with/);
    expect(urlProblem('rtsp:/cam', 'rtsp')).toMatch(/must start with/);
    expect(urlProblem('rtsp://', 'rtsp')).toBe('url must include a host');
    expect(urlProblem('rtsp://cam:99999/x', 'rtsp')).toBe('url is not a valid URL');
    expect(urlProblem('rtsp://cam/a b', 'rtsp')).toMatch(/spaces/);
    expect(urlProblem('http://cam/x?user=a@b', 'mjpeg')).toBeNull();
  });

  it('refuses credentials inside the URL in every form', () => {
    for (const url of [
      'rtsp://admin:secret@10.0.0.5/live',
      'rtsp://admin@10.0.0.5/live',
      'rtsp://:secret@10.0.0.5/live',
      'rtsp://@10.0.0.5/live',
      'http://admin:secret@cam/video.mjpg',
      'https://a%40b:c@cam/video.mjpg',
    ]) {
      const type = url.startsWith('rtsp') ? 'rtsp' : 'mjpeg';
      expect({ url, problem: urlProblem(url, type) }).toEqual({ url, problem: URL_CREDENTIALS_MESSAGE });
    }
    // Also when the scheme is wrong too: the secret is the first thing to fix.
    expect(urlProblem('http://admin:pw@cam/x', 'rtsp')).toBe(URL_CREDENTIALS_MESSAGE);
  });

  it('accepts only /dev/videoN as a usb device', () => {
    for (const device of ['/dev/video', '/dev/sda', '/dev/video0/../sda', 'video0', '/dev/video1234'])
      expect(fields({ ...usb, device })).toEqual(['body.device']);
    expect(fields({ ...usb, device: '/dev/video12' })).toEqual([]);
  });
});

describe('merging a partial update', () => {
  it('keeps what the patch omits and clears what it sets to null', () => {
    expect(mergeCameraSource(rtsp, {})).toEqual(rtsp);
    expect(mergeCameraSource(rtsp, { username: null, password: null })).toEqual({
      ...rtsp,
      username: null,
      has_password: false,
    });
    expect(mergeCameraSource({ ...rtsp, has_password: false }, { password: 'x' }).has_password).toBe(true);
  });

  it("clears the old type's unsent fields when source_type changes, and keeps sent ones", () => {
    expect(mergeCameraSource(rtsp, { source_type: 'usb', device: '/dev/video2' })).toEqual({
      ...usb,
      device: '/dev/video2',
    });
    // A field the request sends stays, so validation can refuse it.
    const merged = mergeCameraSource(rtsp, { source_type: 'usb', device: '/dev/video2', url: 'rtsp://x/y' });
    expect(merged.url).toBe('rtsp://x/y');
    expect(fields(merged)).toEqual(['body.url']);
    // rtsp -> mjpeg: url and credentials belong to both and are kept (the rtsp url then fails the scheme).
    const toMjpeg = mergeCameraSource(rtsp, { source_type: 'mjpeg' });
    expect(toMjpeg).toEqual({ ...rtsp, source_type: 'mjpeg' });
    expect(fields(toMjpeg)).toEqual(['body.url']);
    // Without a change of type nothing is cleared: a stray field is refused instead.
    expect(fields(mergeCameraSource(rtsp, { source_type: 'rtsp', device: '/dev/video0' }))).toEqual([
      'body.device',
    ]);
  });
});
