import { AppError, ValidationFailedError } from '../../common/errors/app-errors';
import { checkJpeg } from '../events/jpeg';
import { MAX_IMAGE_BYTES } from '../events/events.service';

export interface ImageInput {
  data: Buffer;
  mimeType: 'image/jpeg' | 'image/png';
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Checks that `data` is a PNG: the signature, then an IHDR chunk (13 bytes) with a width and height above
 * zero, and an IEND chunk at the end. Does not inflate the image data.
 */
export function checkPng(data: Buffer): { ok: true } | { ok: false; reason: string } {
  if (data.length < 8 || !data.subarray(0, 8).equals(PNG_SIGNATURE))
    return { ok: false, reason: 'is not a PNG image' };
  // Signature (8), IHDR chunk (4 length + 4 type + 13 data + 4 CRC = 25), IEND chunk (12).
  if (data.length < 8 + 25 || data.readUInt32BE(8) !== 13 || data.toString('latin1', 12, 16) !== 'IHDR')
    return { ok: false, reason: 'is not a valid PNG image (no header chunk)' };
  if (data.readUInt32BE(16) === 0 || data.readUInt32BE(20) === 0)
    return { ok: false, reason: 'is not a valid PNG image (zero width or height)' };
  if (data.length < 8 + 25 + 12 || data.toString('latin1', data.length - 8, data.length - 4) !== 'IEND')
    return { ok: false, reason: 'is not a complete PNG image (no end chunk)' };
  return { ok: true };
}

const imageError = (field: string, message: string) =>
  new ValidationFailedError([{ field: `body.${field}`, message: `${field} ${message}` }]);

/**
 * Decodes a base64 image (optionally a `data:image/...;base64,` URI, line breaks allowed) and checks that it
 * is a JPEG or a PNG: 422 otherwise, 413 past 10 MiB decoded.
 */
export function decodeImage(text: string, field = 'image_base64'): ImageInput {
  let data = text.trim();
  const dataUri = /^data:([^;,]*)((?:;[^;,]*)*),/i.exec(data);
  if (dataUri) {
    if (!/;base64$/i.test(dataUri[2])) throw imageError(field, 'must be base64-encoded');
    data = data.slice(dataUri[0].length);
  }
  data = data.replace(/\s+/g, '');
  if (data.length === 0) throw imageError(field, 'must not be empty');
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  if (Math.floor((data.length * 3) / 4) - padding > MAX_IMAGE_BYTES)
    throw new AppError(413, 'Image too large (limit 10 MiB)');
  // A search for one bad character, not an anchored `^[...]+$` match: V8 can run out of stack on the
  // latter for texts of several megabytes.
  if (/[^A-Za-z0-9+/_-]/.test(data.slice(0, data.length - padding)) || data.length % 4 === 1)
    throw imageError(field, 'must be base64-encoded');
  const bytes = Buffer.from(data, 'base64');
  if (bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
    const png = checkPng(bytes);
    if (!png.ok) throw imageError(field, png.reason);
    return { data: bytes, mimeType: 'image/png' };
  }
  const jpeg = checkJpeg(bytes);
  if (!jpeg.ok)
    throw imageError(field, jpeg.reason.replace('is not a JPEG image', 'is neither a JPEG nor a PNG image'));
  return { data: bytes, mimeType: 'image/jpeg' };
}
