import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CSV_HEADER,
  CsvEncoder,
  csvCell,
  csvLine,
  exportFileName,
  ExportRow,
  exportRowToCsv,
  isoFromPgTimestamp,
} from './events-export';

describe('CSV escaping', () => {
  it.each<[string | number | boolean | null | undefined, string]>([
    [null, ''],
    [undefined, ''],
    ['', ''],
    ['plain text', 'plain text'],
    [42, '42'],
    [0, '0'],
    [true, 'true'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['"', '""""'],
    ['line\nbreak', '"line\nbreak"'],
    ['carriage\rreturn', '"carriage\rreturn"'],
    ['crlf\r\nend', '"crlf\r\nend"'],
    ['semi;colon', 'semi;colon'],
    ["it's", "it's"],
    ['naïve café ☕', 'naïve café ☕'],
  ])('csvCell(%j) is %j', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it.each<[string, string]>([
    ['=1+1', "'=1+1"],
    ['+49 170 123', "'+49 170 123"],
    ['-5 degrees', "'-5 degrees"],
    ['@SUM(A1:A2)', "'@SUM(A1:A2)"],
    ['\tTAB', "'\tTAB"],
    ['\rCR', `"'\rCR"`],
    ['=HYPERLINK("http://x","y")', `"'=HYPERLINK(""http://x"",""y"")"`],
    ['=a,b', `"'=a,b"`],
  ])('neutralises the formula cell %j as %j', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('leaves the formula characters alone when they are not first', () => {
    expect(csvCell('a=b+c-d@e')).toBe('a=b+c-d@e');
    expect(csvCell(' =1')).toBe(' =1');
  });

  it('joins cells with commas and ends records with CRLF', () => {
    expect(csvLine(['a', null, 3, 'x,y'])).toBe('a,,3,"x,y"\r\n');
    expect(csvLine([])).toBe('\r\n');
  });

  it('has the header row of the specification', () => {
    expect(CSV_HEADER).toBe(
      'id,timestamp,camera_id,camera_name,detection_type,objects_detected,confidence,description,source_type,provider_used,thumbnail_url,created_at\r\n',
    );
  });

  it('turns an export row into a record, with the thumbnail path only when there is an image', () => {
    const row: ExportRow = [
      'e1',
      '2026-01-01 00:00:00',
      'c1',
      'Front, door',
      'person',
      'person;dog',
      90,
      '=cmd',
      'rtsp',
      null,
      true,
      '2026-01-01 00:00:01.5',
    ];
    expect(exportRowToCsv(row)).toBe(
      'e1,2026-01-01T00:00:00.000Z,c1,"Front, door",person,person;dog,90,\'=cmd,rtsp,,/api/v1/events/e1/thumbnail,2026-01-01T00:00:01.500Z\r\n',
    );
    row[10] = false;
    row[6] = null;
    expect(exportRowToCsv(row)).toBe(
      'e1,2026-01-01T00:00:00.000Z,c1,"Front, door",person,person;dog,,\'=cmd,rtsp,,,2026-01-01T00:00:01.500Z\r\n',
    );
  });
});

describe('isoFromPgTimestamp', () => {
  it.each([
    ['2026-11-22 03:14:15', '2026-11-22T03:14:15.000Z'],
    ['2026-11-22 03:14:15.1', '2026-11-22T03:14:15.100Z'],
    ['2026-11-22 03:14:15.12', '2026-11-22T03:14:15.120Z'],
    ['2026-11-22 03:14:15.123', '2026-11-22T03:14:15.123Z'],
    ['2026-11-22 03:14:15.123999', '2026-11-22T03:14:15.123Z'],
    ['0001-01-01 00:00:00', '0001-01-01T00:00:00.000Z'],
  ])('%s -> %s', (text, iso) => {
    expect(isoFromPgTimestamp(text)).toBe(iso);
  });

  it('agrees with Date for millisecond times', () => {
    const date = new Date('2026-05-06T07:08:09.010Z');
    expect(isoFromPgTimestamp('2026-05-06 07:08:09.01')).toBe(date.toISOString());
  });
});

describe('exportFileName', () => {
  it('is events-<UTC yyyymmdd-hhmmss>.csv', () => {
    expect(exportFileName(new Date('2026-11-22T03:04:05.678Z'))).toBe('events-20261122-030405.csv');
    expect(exportFileName(new Date('2027-01-01T23:59:59Z'))).toBe('events-20270101-235959.csv');
  });
});

describe('CsvEncoder', () => {
  const row = (i: number): ExportRow => [
    `id${i}`,
    '2026-01-01 00:00:00',
    'c',
    'cam',
    'motion',
    '',
    i,
    `row ${i}`,
    'rtsp',
    null,
    false,
    '2026-01-01 00:00:01',
  ];

  async function encode(rows: ExportRow[], batchBytes?: number): Promise<string[]> {
    const chunks: string[] = [];
    await pipeline(
      Readable.from(rows),
      new CsvEncoder(batchBytes),
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          chunks.push(chunk.toString('utf8'));
          callback();
        },
      }),
    );
    return chunks;
  }

  it('writes the header alone when there are no rows', async () => {
    expect((await encode([])).join('')).toBe(CSV_HEADER);
  });

  it('writes the header and one record per row, in order', async () => {
    const text = (await encode([row(1), row(2), row(3)])).join('');
    expect(text).toBe(CSV_HEADER + exportRowToCsv(row(1)) + exportRowToCsv(row(2)) + exportRowToCsv(row(3)));
  });

  it('passes records on in batches of about the batch size, never splitting a record', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => row(i));
    const chunks = await encode(rows, 4096);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.length).toBeGreaterThanOrEqual(4096);
      expect(chunk.length).toBeLessThan(4096 + 100);
      expect(chunk.endsWith('\r\n')).toBe(true);
    }
    expect(chunks.join('')).toBe(CSV_HEADER + rows.map(exportRowToCsv).join(''));
  });
});
