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

/** A spreadsheet would run a cell starting with one of these as a formula (CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;
const QUOTE = /"/g;

/**
 * One CSV cell (RFC 4180): empty for null; text that a spreadsheet would read as a formula gets a leading
 * `'`; a cell with a comma, quote, CR or LF is quoted, its quotes doubled.
 */
export function csvCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') return String(value);
  let text = value;
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(QUOTE, '""')}"` : text;
}

/** A CSV record (cells joined with commas, CRLF ended). */
export function csvLine(cells: readonly (string | number | boolean | null | undefined)[]): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) line += (i === 0 ? '' : ',') + csvCell(cells[i]);
  return line + CRLF;
}

/** `events-<UTC yyyymmdd-hhmmss>.csv` */
export function exportFileName(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
  return `events-${stamp}.csv`;
}

/**
 * PostgreSQL's text of a UTC `timestamp` (`2026-11-22 03:14:15.123456`, fraction optional) as ISO 8601 with
 * milliseconds (`2026-11-22T03:14:15.123Z`), truncated like the JSON records' datetimes.
 */
export function isoFromPgTimestamp(text: string): string {
  const millis = text.length > 20 ? (text.slice(20) + '00').slice(0, 3) : '000';
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${millis}Z`;
}

/**
 * One row of the export query in `rowMode: 'array'` (events.repository.ts, EXPORT_COLUMNS): the columns of
 * CSV_COLUMNS, except that the timestamps are PostgreSQL text (see isoFromPgTimestamp) and thumbnail_url
 * is whether the event has an image.
 */
export type ExportRow = [
  id: string,
  timestamp: string,
  cameraId: string,
  cameraName: string,
  detectionType: string,
  objectsDetected: string,
  confidence: number | null,
  description: string | null,
  sourceType: string,
  providerUsed: string | null,
  hasImage: boolean,
  createdAt: string,
];

/**
 * One export row as a CSV record. Ids, enums, numbers and timestamps cannot contain a comma, quote or line
 * break, nor start with a formula character, so only the free-text cells go through csvCell (this is the
 * export's hot loop).
 */
export function exportRowToCsv(row: ExportRow): string {
  return (
    `${row[0]},${isoFromPgTimestamp(row[1])},${row[2]},${csvCell(row[3])},${row[4]},${csvCell(row[5])},` +
    `${row[6] ?? ''},${csvCell(row[7])},${row[8]},${csvCell(row[9])},` +
    `${row[10] ? `/api/v1/events/${row[0]}/thumbnail` : ''},${isoFromPgTimestamp(row[11])}${CRLF}`
  );
}

/**
 * Turns export rows (object mode in) into CSV text (bytes out): the header row first, then one record per
 * row. Records are passed on in batches of about 64 KiB, so the response is written in few large chunks
 * while backpressure still reaches the database cursor.
 */
export class CsvEncoder extends Transform {
  private pending = CSV_HEADER;

  constructor(private readonly batchBytes = 64 * 1024) {
    super({ writableObjectMode: true, readableObjectMode: false, writableHighWaterMark: 256 });
  }

  override _transform(row: ExportRow, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.pending += exportRowToCsv(row);
    if (this.pending.length >= this.batchBytes) {
      const chunk = this.pending;
      this.pending = '';
      callback(null, chunk);
      return;
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    const chunk = this.pending;
    this.pending = '';
    callback(null, chunk || undefined);
  }
}
