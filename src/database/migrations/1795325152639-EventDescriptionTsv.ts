import { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Word search on a stored tsvector kept by a trigger, instead of an expression index: when the planner
 * walks the timestamp index and filters row by row (rare words), it no longer recomputes to_tsvector.
 */
export class EventDescriptionTsv1795325152639 implements MigrationInterface {
    name = 'EventDescriptionTsv1795325152639'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            ALTER TABLE "events"
            ADD "description_tsv" tsvector
        `);
        await queryRunner.query(`
            CREATE FUNCTION events_description_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                NEW.description_tsv := to_tsvector('simple', coalesce(NEW.description, ''));
                RETURN NEW;
            END
            $$
        `);
        await queryRunner.query(`
            CREATE TRIGGER events_description_tsv BEFORE INSERT OR UPDATE OF description ON "events"
            FOR EACH ROW EXECUTE FUNCTION events_description_tsv()
        `);
        await queryRunner.query(`
            UPDATE "events" SET "description_tsv" = to_tsvector('simple', coalesce("description", ''))
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_description_fts_idx"
        `);
        await queryRunner.query(`
            CREATE INDEX "events_description_fts_idx" ON "events" USING GIN ("description_tsv")
        `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            DROP INDEX "public"."events_description_fts_idx"
        `);
        await queryRunner.query(`
            CREATE INDEX "events_description_fts_idx" ON "events" USING GIN (to_tsvector('simple', coalesce("description", '')))
        `);
        await queryRunner.query(`
            DROP TRIGGER events_description_tsv ON "events"
        `);
        await queryRunner.query(`
            DROP FUNCTION events_description_tsv()
        `);
        await queryRunner.query(`
            ALTER TABLE "events" DROP COLUMN "description_tsv"
        `);
    }

}
