import type { FieldError } from '../../common/errors/app-errors';
import type { CameraSourceType } from './entities/camera.entity';

/**
 * Which connection fields a camera's `source_type` uses, and the checks on them. Pure logic, shared by
 * create and update (where it runs on the merged result of the stored camera and the request).
 */

export const SOURCE_FIELDS = [
  'url',
  'username',
  'password',
  'device',
  'protect_controller_id',
  'protect_camera_id',
] as const;
export type SourceField = (typeof SOURCE_FIELDS)[number];

/** The fields each source type uses; every other connection field must be empty. */
export const FIELDS_BY_SOURCE_TYPE: Record<CameraSourceType, readonly SourceField[]> = {
  rtsp: ['url', 'username', 'password'],
  mjpeg: ['url', 'username', 'password'],
  usb: ['device'],
  protect: ['protect_controller_id', 'protect_camera_id'],
};

const REQUIRED_BY_SOURCE_TYPE: Record<CameraSourceType, readonly SourceField[]> = {
  rtsp: ['url'],
  mjpeg: ['url'],
  usb: ['device'],
  protect: ['protect_controller_id', 'protect_camera_id'],
};

const URL_SCHEMES: Partial<Record<CameraSourceType, readonly string[]>> = {
  rtsp: ['rtsp', 'rtsps'],
  mjpeg: ['http', 'https'],
};

export const USB_DEVICE_PATTERN = /^\/dev\/video\d{1,3}$/;

export const URL_CREDENTIALS_MESSAGE =
  'url must not contain credentials (user:password@ or user@); set the username and password fields instead';

/** A camera's connection settings; the password only as whether one is stored. */
export interface CameraSource {
  source_type: CameraSourceType;
  url: string | null;
  username: string | null;
  has_password: boolean;
  device: string | null;
  protect_controller_id: string | null;
  protect_camera_id: string | null;
}

/** A request's connection fields: `undefined` keeps the stored value, `null` clears it. */
export interface CameraSourcePatch {
  source_type?: CameraSourceType;
  url?: string | null;
  username?: string | null;
  password?: string | null;
  device?: string | null;
  protect_controller_id?: string | null;
  protect_camera_id?: string | null;
}

function isSet(source: CameraSource, field: SourceField): boolean {
  return field === 'password' ? source.has_password : source[field] !== null;
}

/**
 * The connection settings after a partial update. When the update changes `source_type`, the fields the
 * new type does not use and the request does not mention are cleared (so switching an RTSP camera to USB
 * needs only `{source_type: "usb", device: "/dev/video0"}`); fields the request sends are kept, and
 * `validateCameraSource` refuses them if they do not belong.
 */
export function mergeCameraSource(current: CameraSource, patch: CameraSourcePatch): CameraSource {
  const next: CameraSource = { ...current };
  if (patch.source_type !== undefined) next.source_type = patch.source_type;
  if (patch.url !== undefined) next.url = patch.url;
  if (patch.username !== undefined) next.username = patch.username;
  if (patch.password !== undefined) next.has_password = patch.password !== null;
  if (patch.device !== undefined) next.device = patch.device;
  if (patch.protect_controller_id !== undefined) next.protect_controller_id = patch.protect_controller_id;
  if (patch.protect_camera_id !== undefined) next.protect_camera_id = patch.protect_camera_id;
  if (next.source_type !== current.source_type) {
    const used = FIELDS_BY_SOURCE_TYPE[next.source_type];
    for (const field of SOURCE_FIELDS) {
      if (used.includes(field) || patch[field] !== undefined) continue;
      if (field === 'password') next.has_password = false;
      else next[field] = null;
    }
  }
  return next;
}

/** The problem with a stream URL for a source type, or null when it is fine. */
export function urlProblem(url: string, sourceType: CameraSourceType): string | null {
  const schemes = URL_SCHEMES[sourceType] ?? [];
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)/i.exec(url);
  // Credentials first: whatever else is wrong, a secret in the URL is what the caller must hear about.
  if (match && match[2].includes('@')) return URL_CREDENTIALS_MESSAGE;
  const expected = schemes.map((s) => `${s}://`).join(' or ');
  if (!match || !schemes.includes(match[1].toLowerCase()))
    return `url must start with ${expected} for source_type ${sourceType}`;
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return 'url must not contain spaces or control characters';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'url is not a valid URL';
  }
  if (!parsed.hostname) return 'url must include a host';
  return null;
}

/** Every problem with a camera's connection settings, as 422 field errors (`body.<field>`). */
export function validateCameraSource(source: CameraSource): FieldError[] {
  const errors: FieldError[] = [];
  const type = source.source_type;
  const used = FIELDS_BY_SOURCE_TYPE[type];
  for (const field of SOURCE_FIELDS) {
    const set = isSet(source, field);
    if (!used.includes(field)) {
      if (set)
        errors.push({ field: `body.${field}`, message: `${field} is not allowed for source_type ${type}` });
      continue;
    }
    if (!set) {
      if (REQUIRED_BY_SOURCE_TYPE[type].includes(field))
        errors.push({ field: `body.${field}`, message: `${field} is required for source_type ${type}` });
      continue;
    }
  }
  if (used.includes('url') && source.url !== null) {
    const problem = urlProblem(source.url, type);
    if (problem) errors.push({ field: 'body.url', message: problem });
  }
  if (type === 'usb' && source.device !== null && !USB_DEVICE_PATTERN.test(source.device)) {
    errors.push({ field: 'body.device', message: 'device must be a video device path like /dev/video0' });
  }
  return errors;
}
