import { AppError, ValidationFailedError } from '../../common/errors/app-errors';
import { decodeJpeg, MAX_IMAGE_BYTES } from './events.service';
import { checkJpeg } from './jpeg';

/** A 16x16 red JPEG made by ffmpeg (`-f lavfi -i color=c=red:s=16x16 -frames:v 1`). */
const RED_JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgEBAQEBAUFBQUFBQYGBgYGBgYGBgYGBgYHBwcICAgHBwcGBgcHCAgICAkJCQgICAgJCQoKCgwMCwsODg4RERT/xABMAAEBAAAAAAAAAAAAAAAAAAAABgEBAQAAAAAAAAAAAAAAAAAABgcQAQAAAAAAAAAAAAAAAAAAAAARAQAAAAAAAAAAAAAAAAAAAAD/wAARCAAQABADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLAFF/f//Z',
  'base64',
);
const PNG_1x1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
/** Offset of the SOF0 segment's marker in RED_JPEG. */
const SOF = RED_JPEG.indexOf(Buffer.from([0xff, 0xc0]));

function withFrame(width: number, height: number, marker = 0xc0): Buffer {
  const copy = Buffer.from(RED_JPEG);
  copy[SOF + 1] = marker;
  copy.writeUInt16BE(height, SOF + 5);
  copy.writeUInt16BE(width, SOF + 7);
  return copy;
}

describe('checkJpeg', () => {
  it('accepts a real JPEG and reads its size', () => {
    expect(SOF).toBeGreaterThan(0);
    expect(checkJpeg(RED_JPEG)).toEqual({ ok: true, width: 16, height: 16 });
  });

  it('reads other sizes and progressive frames', () => {
    expect(checkJpeg(withFrame(640, 360))).toEqual({ ok: true, width: 640, height: 360 });
    expect(checkJpeg(withFrame(1, 65535, 0xc2))).toEqual({ ok: true, width: 1, height: 65535 });
  });

  it('allows zero padding after the end marker', () => {
    expect(checkJpeg(Buffer.concat([RED_JPEG, Buffer.alloc(32)])).ok).toBe(true);
  });

  it.each<[string, Buffer, RegExp]>([
    ['a PNG', PNG_1x1, /PNG/],
    ['empty', Buffer.alloc(0), /not a JPEG/],
    ['text', Buffer.from('hello world, not an image'), /not a JPEG/],
    ['only the start marker', Buffer.from([0xff, 0xd8]), /not a JPEG/],
    ['no end marker', RED_JPEG.subarray(0, RED_JPEG.length - 2), /end-of-image/],
    ['garbage after the end marker', Buffer.concat([RED_JPEG, Buffer.from('trailing')]), /end-of-image/],
    ['SOI + EOI only', Buffer.from([0xff, 0xd8, 0xff, 0xd9]), /no image data/],
    ['zero width', withFrame(0, 16), /zero width or height/],
    ['zero height', withFrame(16, 0), /zero width or height/],
    [
      'a segment longer than the file',
      Buffer.concat([RED_JPEG.subarray(0, 4), Buffer.from([0xff, 0xff]), RED_JPEG.subarray(6)]),
      /truncated segment/,
    ],
    [
      'bytes between segments',
      Buffer.concat([RED_JPEG.subarray(0, 2), Buffer.from([0x00, 0x01]), RED_JPEG.subarray(2)]),
      /corrupt marker/,
    ],
    [
      'a scan before any frame header',
      Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xda, 0x00, 0x02]), Buffer.from([0x00, 0xff, 0xd9])]),
      /scan before frame header/,
    ],
  ])('refuses %s', (_name, data, reason) => {
    const result = checkJpeg(data);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(reason);
  });
});

describe('decodeJpeg (POST /events image_base64)', () => {
  const field = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return error;
    }
    throw new Error('did not throw');
  };

  it('decodes plain base64, a data URI, line-wrapped text and base64url', () => {
    const b64 = RED_JPEG.toString('base64');
    expect(decodeJpeg(b64).equals(RED_JPEG)).toBe(true);
    expect(decodeJpeg(`data:image/jpeg;base64,${b64}`).equals(RED_JPEG)).toBe(true);
    expect(decodeJpeg(b64.replace(/(.{60})/g, '$1\r\n')).equals(RED_JPEG)).toBe(true);
    expect(decodeJpeg(RED_JPEG.toString('base64url')).equals(RED_JPEG)).toBe(true);
  });

  it.each<[string, string]>([
    ['', 'image_base64 must not be empty'],
    ['   ', 'image_base64 must not be empty'],
    ['@@@@', 'image_base64 must be base64-encoded'],
    ['abcde', 'image_base64 must be base64-encoded'],
    ['data:image/jpeg,abcd', 'image_base64 must be base64-encoded'],
    [PNG_1x1.toString('base64'), 'image_base64 is a PNG image; only JPEG is accepted'],
    [
      Buffer.from('GIF89a....').toString('base64'),
      'image_base64 is not a JPEG image (no start-of-image marker)',
    ],
  ])('refuses %j with a 422 on body.image_base64', (text, message) => {
    const error = field(() => decodeJpeg(text));
    expect(error).toBeInstanceOf(ValidationFailedError);
    expect((error as ValidationFailedError).errors).toEqual([{ field: 'body.image_base64', message }]);
  });

  it('answers 413 past 10 MiB decoded, before decoding', () => {
    const text = 'A'.repeat(Math.ceil(((MAX_IMAGE_BYTES + 3) * 4) / 3 / 4) * 4);
    const error = field(() => decodeJpeg(text));
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(413);
  });
});
