import { Transform, TransformCallback } from 'node:stream';

/** The CSV columns of GET /events/export, in order (decisions.md §4). */
export const CSV_COLUMNS = [
  'id',
  'timestamp',
  'camera_id',
  'camera_name',
  'detection_type',
  'objects_detected',
  'confidence',
  'description',
  'source_type',
  'provider_used',
  'thumbnail_url',
  'created_at',
] as const;

const CRLF = '\r\n';
export const CSV_HEADER = CSV_COLUMNS.join(',') + CRLF;

/** `events-<UTC yyyymmdd-hhmmss>.csv` */
export function exportFileName(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
  return `events-${stamp}.csv`;
}

const QUOTE = 0x22;
const LF = 0x0a;
const CR_LF = Buffer.from(CRLF);

/**
 * Turns the CSV that PostgreSQL's COPY (FORMAT csv) writes (records ended by LF) into the export's bytes:
 * the header row first, then the same records ended by CRLF (RFC 4180). A LF inside a quoted cell is data
 * and stays as it is; quotes are balanced within each cell (doubled inside), so counting them tells which
 * LF ends a record, across chunk boundaries too.
 */
export class CsvRecords extends Transform {
  private headerSent = false;
  private quoted = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const parts: Buffer[] = [];
    if (!this.headerSent) {
      this.headerSent = true;
      parts.push(Buffer.from(CSV_HEADER));
    }
    // Native searches for the next quote and LF (this is the export's hot loop).
    let start = 0;
    let quote = chunk.indexOf(QUOTE);
    let lf = chunk.indexOf(LF);
    while (lf !== -1) {
      if (quote !== -1 && quote < lf) {
        this.quoted = !this.quoted;
        quote = chunk.indexOf(QUOTE, quote + 1);
        continue;
      }
      if (!this.quoted) {
        parts.push(chunk.subarray(start, lf), CR_LF);
        start = lf + 1;
      }
      lf = chunk.indexOf(LF, lf + 1);
    }
    // Quotes after the last LF still count for the next chunk.
    while (quote !== -1) {
      this.quoted = !this.quoted;
      quote = chunk.indexOf(QUOTE, quote + 1);
    }
    parts.push(chunk.subarray(start));
    callback(null, Buffer.concat(parts));
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.headerSent ? undefined : Buffer.from(CSV_HEADER));
  }
}
