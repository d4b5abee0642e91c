import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CSV_HEADER, CsvRecords, exportFileName } from './events-export';

/** Runs COPY-style CSV text, cut into the given chunks, through CsvRecords. */
async function records(chunks: string[]): Promise<string> {
  const out: Buffer[] = [];
  await pipeline(
    Readable.from(chunks.map((c) => Buffer.from(c))),
    new CsvRecords(),
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        out.push(chunk);
        callback();
      },
    }),
  );
  return Buffer.concat(out).toString();
}

describe('CSV_HEADER', () => {
  it('is the header row of the specification', () => {
    expect(CSV_HEADER).toBe(
      'id,timestamp,camera_id,camera_name,detection_type,objects_detected,confidence,description,source_type,provider_used,thumbnail_url,created_at\r\n',
    );
  });
});

describe('CsvRecords', () => {
  it('sends the header alone when there is no record', async () => {
    expect(await records([])).toBe(CSV_HEADER);
  });

  it('ends every record with CRLF', async () => {
    expect(await records(['a,b,1\nc,,2\n'])).toBe(`${CSV_HEADER}a,b,1\r\nc,,2\r\n`);
  });

  it('keeps line breaks inside quoted cells as data', async () => {
    const copy = 'a,"line one\nline two\r\nthree",x\nb,"say ""hi""\n",y\n';
    expect(await records([copy])).toBe(
      `${CSV_HEADER}a,"line one\nline two\r\nthree",x\r\nb,"say ""hi""\n",y\r\n`,
    );
  });

  it('gives the same bytes however the input is cut', async () => {
    const copy = 'a,"q ""x""\ny",1\nb,"\n",2\nc,,3\n';
    const whole = await records([copy]);
    for (let cut = 1; cut < copy.length; cut++) {
      expect(await records([copy.slice(0, cut), copy.slice(cut)])).toBe(whole);
    }
    expect(await records(copy.split(''))).toBe(whole);
    expect(whole).toBe(`${CSV_HEADER}a,"q ""x""\ny",1\r\nb,"\n",2\r\nc,,3\r\n`);
  });

  it('passes multi-byte text through unchanged', async () => {
    const copy = 'naïve café ☕,"日本, 語"\n';
    const bytes = Buffer.from(copy);
    // Cut inside the multi-byte characters.
    const chunks = [bytes.subarray(0, 3), bytes.subarray(3, 13), bytes.subarray(13)].map((b) =>
      b.toString('latin1'),
    );
    const out: Buffer[] = [];
    await pipeline(
      Readable.from(chunks.map((c) => Buffer.from(c, 'latin1'))),
      new CsvRecords(),
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          out.push(chunk);
          callback();
        },
      }),
    );
    expect(Buffer.concat(out).toString()).toBe(`${CSV_HEADER}naïve café ☕,"日本, 語"\r\n`);
  });
});

describe('exportFileName', () => {
  it('is events-<UTC yyyymmdd-hhmmss>.csv', () => {
    expect(exportFileName(new Date('2026-11-22T03:04:05.678Z'))).toBe('events-20261122-030405.csv');
    expect(exportFileName(new Date('2027-01-01T23:59:59Z'))).toBe('events-20270101-235959.csv');
  });
});
