import {
  buildEventFilter,
  countSql,
  exportSql,
  listSql,
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
    expect(list.text).toMatch(/ORDER BY e\.timestamp ASC, e\.id ASC LIMIT \$3 OFFSET \$4$/);
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
