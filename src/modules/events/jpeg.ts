/** What a buffer is, as far as event images go. */
export type ImageCheck = { ok: true; width: number; height: number } | { ok: false; reason: string };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Start-of-frame markers (baseline, extended, progressive, lossless; not DHT C4, JPG C8, DAC CC). */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/**
 * Checks that `data` is a JPEG: the SOI marker first, an EOI marker last (trailing zero padding allowed),
 * a well-formed chain of marker segments up to the start of scan, and a frame header (SOF) with a width
 * and height above zero. Does not decode the entropy-coded data.
 */
export function checkJpeg(data: Buffer): ImageCheck {
  if (data.length >= 8 && data.subarray(0, 8).equals(PNG_SIGNATURE))
    return { ok: false, reason: 'is a PNG image; only JPEG is accepted' };
  if (data.length < 4 || data[0] !== 0xff || data[1] !== 0xd8)
    return { ok: false, reason: 'is not a JPEG image (no start-of-image marker)' };
  let end = data.length;
  while (end > 2 && data[end - 1] === 0x00) end--;
  if (end < 4 || data[end - 2] !== 0xff || data[end - 1] !== 0xd9)
    return { ok: false, reason: 'is not a complete JPEG image (no end-of-image marker)' };

  let offset = 2;
  let frame: { width: number; height: number } | null = null;
  while (offset < end) {
    if (data[offset] !== 0xff) return { ok: false, reason: 'is not a valid JPEG image (corrupt marker)' };
    // Any number of 0xFF fill bytes may precede a marker.
    while (offset < end && data[offset] === 0xff) offset++;
    if (offset >= end) break;
    const marker = data[offset++];
    if (marker === 0xd8 || marker === 0x00)
      return { ok: false, reason: 'is not a valid JPEG image (corrupt marker)' };
    // Markers without a length: TEM and RST0..7 (not expected before the scan, but legal).
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    if (marker === 0xd9) break; // EOI before any scan
    if (offset + 2 > end) return { ok: false, reason: 'is not a valid JPEG image (truncated segment)' };
    const length = data.readUInt16BE(offset);
    if (length < 2 || offset + length > end)
      return { ok: false, reason: 'is not a valid JPEG image (truncated segment)' };
    if (isStartOfFrame(marker)) {
      if (length < 8) return { ok: false, reason: 'is not a valid JPEG image (short frame header)' };
      const height = data.readUInt16BE(offset + 3);
      const width = data.readUInt16BE(offset + 5);
      frame = { width, height };
    }
    if (marker === 0xda) {
      // Start of scan: entropy-coded data follows, up to EOI.
      if (!frame) return { ok: false, reason: 'is not a valid JPEG image (scan before frame header)' };
      if (frame.width === 0 || frame.height === 0)
        return { ok: false, reason: 'is not a valid JPEG image (zero width or height)' };
      return { ok: true, width: frame.width, height: frame.height };
    }
    offset += length;
  }
  return { ok: false, reason: 'is not a valid JPEG image (no image data)' };
}
