import { MigrationInterface, QueryRunner } from "typeorm";

export class AiCallsFeedback1795331144404 implements MigrationInterface {
    name = 'AiCallsFeedback1795331144404'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            CREATE TYPE "public"."ai_call_purpose" AS ENUM(
                'describe',
                'reanalyse',
                'adhoc',
                'refine_prompt'
            )
        `);
        await queryRunner.query(`
            CREATE TABLE "ai_calls" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "provider" character varying(50) NOT NULL,
                "model" character varying(200) NOT NULL,
                "purpose" "public"."ai_call_purpose" NOT NULL,
                "event_id" uuid,
                "success" boolean NOT NULL,
                "error" text,
                "input_tokens" integer NOT NULL DEFAULT '0',
                "output_tokens" integer NOT NULL DEFAULT '0',
                "cost_usd" numeric(12, 6) NOT NULL DEFAULT '0',
                "latency_ms" integer NOT NULL,
                "context_events" integer NOT NULL DEFAULT '0',
                "context_tokens" integer NOT NULL DEFAULT '0',
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_072aa0bd7b20d78300b6d4d9b99" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE INDEX "ai_calls_provider_created_at_idx" ON "ai_calls" ("provider", "created_at")
        `);
        await queryRunner.query(`
            CREATE INDEX "ai_calls_created_at_idx" ON "ai_calls" ("created_at")
        `);
        await queryRunner.query(`
            CREATE TYPE "public"."feedback_rating" AS ENUM('helpful', 'not_helpful')
        `);
        await queryRunner.query(`
            CREATE TABLE "event_feedback" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "event_id" uuid NOT NULL,
                "rating" "public"."feedback_rating" NOT NULL,
                "correction" text,
                "description" text,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_45430c2b672fff2eef02db0fed1" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE INDEX "event_feedback_created_at_idx" ON "event_feedback" ("created_at")
        `);
        await queryRunner.query(`
            CREATE INDEX "event_feedback_event_id_idx" ON "event_feedback" ("event_id")
        `);
        await queryRunner.query(`
            CREATE TABLE "reanalysis_requests" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "event_id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_d91e587e8e5e93346252aa4fb77" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE INDEX "reanalysis_requests_event_id_created_at_idx" ON "reanalysis_requests" ("event_id", "created_at")
        `);
        await queryRunner.query(`
            ALTER TABLE "events"
            ADD "description_attempts" smallint NOT NULL DEFAULT '0'
        `);
        await queryRunner.query(`
            ALTER TABLE "events"
            ADD "description_due_at" TIMESTAMP WITH TIME ZONE
        `);
        await queryRunner.query(`
            CREATE INDEX "events_description_due_idx" ON "events" ("description_due_at")
            WHERE description_due_at IS NOT NULL
        `);
        await queryRunner.query(`
            ALTER TABLE "event_feedback"
            ADD CONSTRAINT "FK_c04f68822fb845b4a8e655e7b42" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
        await queryRunner.query(`
            ALTER TABLE "reanalysis_requests"
            ADD CONSTRAINT "FK_ead38adb1d75c912461d149e493" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
        // Events already waiting for a description (with an image) become due for the AI queue.
        await queryRunner.query(`
            UPDATE "events" SET "description_due_at" = now()
            WHERE "description_status" = 'pending' AND "image_file" IS NOT NULL
        `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            ALTER TABLE "reanalysis_requests" DROP CONSTRAINT "FK_ead38adb1d75c912461d149e493"
        `);
        await queryRunner.query(`
            ALTER TABLE "event_feedback" DROP CONSTRAINT "FK_c04f68822fb845b4a8e655e7b42"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_description_due_idx"
        `);
        await queryRunner.query(`
            ALTER TABLE "events" DROP COLUMN "description_due_at"
        `);
        await queryRunner.query(`
            ALTER TABLE "events" DROP COLUMN "description_attempts"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."reanalysis_requests_event_id_created_at_idx"
        `);
        await queryRunner.query(`
            DROP TABLE "reanalysis_requests"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."event_feedback_event_id_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."event_feedback_created_at_idx"
        `);
        await queryRunner.query(`
            DROP TABLE "event_feedback"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."feedback_rating"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."ai_calls_created_at_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."ai_calls_provider_created_at_idx"
        `);
        await queryRunner.query(`
            DROP TABLE "ai_calls"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."ai_call_purpose"
        `);
    }

}
