import { checkPng, decodeImage } from './image-input';

/** A 16x16 red JPEG made by ffmpeg (`-f lavfi -i color=c=red:s=16x16 -frames:v 1`). */
const RED_JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgEBAQEBAUFBQUFBQYGBgYGBgYGBgYGBgYHBwcICAgHBwcGBgcHCAgICAkJCQgICAgJCQoKCgwMCwsODg4RERT/xABMAAEBAAAAAAAAAAAAAAAAAAAABgEBAQAAAAAAAAAAAAAAAAAABgcQAQAAAAAAAAAAAAAAAAAAAAARAQAAAAAAAAAAAAAAAAAAAAD/wAARCAAQABADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLAFF/f//Z',
  'base64',
);
const PNG_1x1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

describe('decodeImage', () => {
  it('accepts a JPEG and a PNG, with or without a data URI and line breaks', () => {
    expect(decodeImage(RED_JPEG.toString('base64'))).toEqual({ data: RED_JPEG, mimeType: 'image/jpeg' });
    const wrapped = `data:image/png;base64,${PNG_1x1.toString('base64').replace(/(.{20})/g, '$1\n')}`;
    expect(decodeImage(wrapped)).toEqual({ data: PNG_1x1, mimeType: 'image/png' });
  });

  it.each([
    ['empty text', '  ', 'image_base64 must not be empty'],
    ['text that is not base64', 'not base64!', 'image_base64 must be base64-encoded'],
    ['a data URI that is not base64', 'data:image/png,abc', 'image_base64 must be base64-encoded'],
    ['a GIF', Buffer.from('GIF89a0000000000').toString('base64'), 'is neither a JPEG nor a PNG image'],
    ['a truncated PNG', PNG_1x1.subarray(0, 40).toString('base64'), 'is not a complete PNG image'],
    ['a truncated JPEG', RED_JPEG.subarray(0, 100).toString('base64'), 'is not a complete JPEG image'],
  ])('refuses %s with 422', (_name, text, message) => {
    let caught: unknown;
    try {
      decodeImage(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ status: 422 });
    expect((caught as { errors: { field: string; message: string }[] }).errors[0].field).toBe(
      'body.image_base64',
    );
    expect((caught as { errors: { message: string }[] }).errors[0].message).toContain(message);
  });

  it('checks a large image (9 MiB) without running out of stack', () => {
    const large = Buffer.concat([
      RED_JPEG.subarray(0, -2),
      Buffer.alloc(9 * 1024 * 1024),
      RED_JPEG.subarray(-2),
    ]);
    expect(decodeImage(large.toString('base64'))).toEqual({ data: large, mimeType: 'image/jpeg' });
    expect(() => decodeImage(`${'A'.repeat(8 * 1024 * 1024)}!AAA`)).toThrow(
      expect.objectContaining({ status: 422 }),
    );
  });

  it('answers 413 past 10 MiB without decoding', () => {
    expect(() => decodeImage('A'.repeat(14 * 1024 * 1024 + 8))).toThrow(
      expect.objectContaining({ status: 413 }),
    );
  });
});

describe('checkPng', () => {
  it('refuses a header with zero width', () => {
    const zero = Buffer.from(PNG_1x1);
    zero.writeUInt32BE(0, 16);
    expect(checkPng(zero)).toEqual({ ok: false, reason: 'is not a valid PNG image (zero width or height)' });
    expect(checkPng(PNG_1x1)).toEqual({ ok: true });
  });
});
