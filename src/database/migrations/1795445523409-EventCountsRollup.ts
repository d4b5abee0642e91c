import { MigrationInterface, QueryRunner } from "typeorm";

const HOURS = Array.from({ length: 24 }, (_, h) => `h${String(h).padStart(2, '0')}`);

/**
 * The upsert that applies the changes `changes` (rows of: ts, camera_id, detection_type, source_type,
 * confidence, sign) to event_counts, one row per UTC day, camera, type and source; groups whose net change
 * is zero (an update that changed none of those columns) write nothing.
 */
function applyChanges(changes: string): string {
    const sums = [
        'sum(c.sign)',
        'coalesce(sum(c.sign) FILTER (WHERE c.confidence IS NOT NULL), 0)',
        'coalesce(sum(c.sign * c.confidence), 0)',
        ...HOURS.map((_, h) => `coalesce(sum(c.sign) FILTER (WHERE extract(hour FROM c.ts AT TIME ZONE 'UTC') = ${h}), 0)`),
    ];
    return `
        INSERT INTO event_counts AS r (day, camera_id, detection_type, source_type, n, conf_n, conf_sum, ${HOURS.join(', ')})
        SELECT (c.ts AT TIME ZONE 'UTC')::date, c.camera_id, c.detection_type, c.source_type,
               ${sums.join(',\n               ')}
        FROM (${changes}) c
        GROUP BY 1, 2, 3, 4
        HAVING ${sums.map((s) => `${s} <> 0`).join(' OR ')}
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (day, camera_id, detection_type, source_type) DO UPDATE SET
            n = r.n + EXCLUDED.n, conf_n = r.conf_n + EXCLUDED.conf_n, conf_sum = r.conf_sum + EXCLUDED.conf_sum,
            ${HOURS.map((h) => `${h} = r.${h} + EXCLUDED.${h}`).join(', ')};
        DELETE FROM event_counts r
        USING (SELECT DISTINCT (c.ts AT TIME ZONE 'UTC')::date AS day, c.camera_id, c.detection_type, c.source_type
               FROM (${changes}) c WHERE c.sign < 0) k
        WHERE r.day = k.day AND r.camera_id = k.camera_id AND r.detection_type = k.detection_type
          AND r.source_type = k.source_type AND r.n = 0;`;
}

const COLUMNS = 'timestamp AS ts, camera_id, detection_type, source_type, confidence';

/**
 * Event counts per UTC day, camera, detection type and source (with confidence sums and counts per UTC hour
 * of the day), kept exact by statement-level triggers on events. GET /events/stats and the totals of
 * GET /events read them instead of counting every event; see events.repository.ts.
 */
export class EventCountsRollup1795445523409 implements MigrationInterface {
    name = 'EventCountsRollup1795445523409'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            CREATE TABLE "event_counts" (
                "day" date NOT NULL,
                "camera_id" uuid NOT NULL,
                "detection_type" "public"."detection_type" NOT NULL,
                "source_type" "public"."event_source_type" NOT NULL,
                "n" integer NOT NULL,
                "conf_n" integer NOT NULL,
                "conf_sum" bigint NOT NULL,
                ${HOURS.map((h) => `"${h}" integer NOT NULL`).join(',\n                ')},
                CONSTRAINT "event_counts_pkey" PRIMARY KEY ("day", "camera_id", "detection_type", "source_type")
            )
        `);
        for (const column of ['camera_id', 'detection_type', 'source_type']) {
            await queryRunner.query(`
                CREATE INDEX "event_counts_${column}_idx" ON "event_counts" ("${column}", "day")
            `);
        }
        await queryRunner.query(`
            CREATE FUNCTION event_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                ${applyChanges(`SELECT ${COLUMNS}, 1 AS sign FROM new_rows`)}
                RETURN NULL;
            END
            $$
        `);
        await queryRunner.query(`
            CREATE FUNCTION event_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                ${applyChanges(`SELECT ${COLUMNS}, -1 AS sign FROM old_rows`)}
                RETURN NULL;
            END
            $$
        `);
        await queryRunner.query(`
            CREATE FUNCTION event_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                ${applyChanges(`SELECT ${COLUMNS}, 1 AS sign FROM new_rows UNION ALL SELECT ${COLUMNS}, -1 AS sign FROM old_rows`)}
                RETURN NULL;
            END
            $$
        `);
        await queryRunner.query(`
            CREATE TRIGGER event_counts_insert AFTER INSERT ON "events" REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION event_counts_insert()
        `);
        await queryRunner.query(`
            CREATE TRIGGER event_counts_delete AFTER DELETE ON "events" REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION event_counts_delete()
        `);
        await queryRunner.query(`
            CREATE TRIGGER event_counts_update AFTER UPDATE ON "events"
            REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION event_counts_update()
        `);
        await queryRunner.query(`
            INSERT INTO event_counts (day, camera_id, detection_type, source_type, n, conf_n, conf_sum, ${HOURS.join(', ')})
            SELECT (timestamp AT TIME ZONE 'UTC')::date, camera_id, detection_type, source_type,
                   count(*), count(confidence), coalesce(sum(confidence), 0),
                   ${HOURS.map((_, h) => `count(*) FILTER (WHERE extract(hour FROM timestamp AT TIME ZONE 'UTC') = ${h})`).join(', ')}
            FROM events GROUP BY 1, 2, 3, 4
        `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`DROP TRIGGER event_counts_update ON "events"`);
        await queryRunner.query(`DROP TRIGGER event_counts_delete ON "events"`);
        await queryRunner.query(`DROP TRIGGER event_counts_insert ON "events"`);
        await queryRunner.query(`DROP FUNCTION event_counts_update()`);
        await queryRunner.query(`DROP FUNCTION event_counts_delete()`);
        await queryRunner.query(`DROP FUNCTION event_counts_insert()`);
        await queryRunner.query(`DROP TABLE "event_counts"`);
    }

}
