import {
  buildEventFilter,
  countSql,
  exportSql,
  listSql,
  planRollup,
  totalSql,
  copyCsvSql,
  orderBy,
  statsGroupsSql,
  statsTimesSql,
} from './events.repository';

describe('buildEventFilter', () => {
  it('is empty without filters', () => {
    expect(buildEventFilter({})).toEqual({ where: '', params: [] });
    expect(buildEventFilter({ cameraIds: [], detectionTypes: [] })).toEqual({ where: '', params: [] });
  });

  it('ANDs every filter with numbered parameters, in a fixed order', () => {
    const start = new Date('2026-01-01T00:00:00Z');
    const end = new Date('2026-01-31T23:59:59.999Z');
    const { where, params } = buildEventFilter({
      q: 'red car',
      minConfidence: 0,
      end,
      start,
      sourceTypes: ['rtsp', 'api'],
      detectionTypes: ['person'],
      cameraIds: ['a', 'b'],
    });
    expect(where).toBe(
      'WHERE e.camera_id = ANY($1::uuid[]) AND e.detection_type = ANY($2::detection_type[]) AND ' +
        'e.source_type = ANY($3::event_source_type[]) AND e.timestamp >= $4 AND e.timestamp <= $5 AND ' +
        "e.confidence >= $6 AND e.description_tsv @@ plainto_tsquery('simple', $7)",
    );
    expect(params).toEqual([['a', 'b'], ['person'], ['rtsp', 'api'], start, end, 0, 'red car']);
  });

  it('never puts values into the SQL text', () => {
    const { where, params } = buildEventFilter({
      q: "x'; DROP TABLE events; --",
      cameraIds: ["1' OR '1'='1"],
    });
    expect(where).not.toContain('DROP');
    expect(where).not.toContain("'1'='1");
    expect(params).toEqual([["1' OR '1'='1"], "x'; DROP TABLE events; --"]);
  });

  it('orders by timestamp then id, both ways', () => {
    expect(orderBy('-timestamp')).toBe('ORDER BY e.timestamp DESC, e.id DESC');
    expect(orderBy('timestamp')).toBe('ORDER BY e.timestamp ASC, e.id ASC');
  });
});

describe('statement builders', () => {
  const filter = buildEventFilter({ detectionTypes: ['person'], minConfidence: 50 });

  it('number the page parameters after the filter parameters', () => {
    const list = listSql(filter, 'timestamp', 50, 100);
    expect(list.text).toMatch(
      /WHERE e\.detection_type = ANY\(\$1::detection_type\[\]\) AND e\.confidence >= \$2 /,
    );
    // The page's ids first (LIMIT/OFFSET inside), then their rows in the same order.
    expect(list.text).toMatch(/ORDER BY e\.timestamp ASC, e\.id ASC LIMIT \$3 OFFSET \$4\) p /);
    expect(list.text).toMatch(/ORDER BY p\.timestamp ASC, p\.id ASC$/);
    expect(list.text).toContain('JOIN cameras c ON c.id = e.camera_id');
    expect(list.values).toEqual([['person'], 50, 50, 100]);
  });

  it('share the filter in count, stats and export', () => {
    for (const statement of [
      countSql(filter),
      statsGroupsSql(filter),
      statsTimesSql(filter),
      exportSql(filter),
    ]) {
      expect(statement.text).toContain(filter.where);
      expect(statement.values).toEqual([['person'], 50]);
    }
    expect(exportSql(filter).text).toMatch(/ORDER BY e\.timestamp DESC, e\.id DESC$/);
    expect(exportSql(filter, 'timestamp').text).toMatch(/ORDER BY e\.timestamp ASC, e\.id ASC$/);
  });

  it('leave out WHERE without filters', () => {
    expect(countSql(buildEventFilter({}))).toEqual({
      text: 'SELECT count(*)::int AS total FROM events e ',
      values: [],
    });
  });
});

describe('planRollup', () => {
  const day = (iso: string) => new Date(iso);

  it('reads whole days from the rollup and the partial days at the bounds from the events', () => {
    const plan = planRollup({ start: day('2026-03-01T05:00:00Z'), end: day('2026-03-04T13:00:00Z') });
    expect(plan).toMatchObject({
      firstDay: day('2026-03-02T00:00:00Z'),
      endDay: day('2026-03-04T00:00:00Z'),
    });
  });

  it('takes a bound on a midnight as it is', () => {
    const plan = planRollup({ start: day('2026-03-01T00:00:00Z'), end: day('2026-03-03T00:00:00Z') });
    expect(plan).toMatchObject({
      firstDay: day('2026-03-01T00:00:00Z'),
      endDay: day('2026-03-03T00:00:00Z'),
    });
  });

  it('is not used without a whole day, or with filters it does not hold', () => {
    expect(planRollup({ start: day('2026-03-01T05:00:00Z'), end: day('2026-03-01T23:00:00Z') })).toBeNull();
    expect(planRollup({ start: day('2026-03-01T05:00:00Z'), end: day('2026-03-02T04:00:00Z') })).toBeNull();
    expect(planRollup({ minConfidence: 10 })).toBeNull();
    expect(planRollup({ q: 'dog' })).toBeNull();
    expect(planRollup({ cameraIds: ['c'], detectionTypes: ['person'], sourceTypes: ['api'] })).not.toBeNull();
  });

  it('numbers the rollup and the partial-day parameters in one statement', () => {
    const plan = planRollup({ cameraIds: ['c1'], start: day('2026-03-01T05:00:00Z') })!;
    const { text, values } = totalSql(plan.filter);
    expect(values).toEqual([
      ['c1'],
      '2026-03-02',
      ['c1'],
      day('2026-03-01T05:00:00Z'),
      day('2026-03-02T00:00:00Z'),
    ]);
    expect(text).toContain('r.camera_id = ANY($1::uuid[]) AND r.day >= $2::date');
    expect(text).toContain('e.camera_id = ANY($3::uuid[]) AND e.timestamp >= $4 AND (e.timestamp < $5)');
  });
});

describe('copyCsvSql', () => {
  it('inlines each parameter as a quoted literal', () => {
    const filter = buildEventFilter({
      cameraIds: ["a'b", 'c'],
      start: new Date('2026-03-01T00:00:00Z'),
      minConfidence: 5,
      q: "x'); DROP TABLE events; -- \\",
    });
    const copy = copyCsvSql(exportSql(filter));
    expect(copy).toMatch(/^COPY \(SELECT .*\) TO STDOUT WITH \(FORMAT csv\)$/s);
    expect(copy).toContain(`e.camera_id = ANY(ARRAY['a''b', 'c']::uuid[])`);
    expect(copy).toContain(`e.timestamp >= '2026-03-01T00:00:00.000Z'`);
    expect(copy).toContain('e.confidence >= 5');
    expect(copy).toContain(`plainto_tsquery('simple',  E'x''); DROP TABLE events; -- \\\\')`);
    expect(copy).not.toMatch(/\$\d/);
  });

  it('refuses a value it cannot quote', () => {
    expect(() => copyCsvSql({ text: 'SELECT $1', values: [{}] })).toThrow();
    expect(() => copyCsvSql({ text: 'SELECT $1', values: [Number.NaN] })).toThrow();
  });
});
