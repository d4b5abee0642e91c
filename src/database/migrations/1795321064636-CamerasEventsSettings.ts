import { MigrationInterface, QueryRunner } from "typeorm";

export class CamerasEventsSettings1795321064636 implements MigrationInterface {
    name = 'CamerasEventsSettings1795321064636'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            CREATE TYPE "public"."detection_type" AS ENUM(
                'person',
                'vehicle',
                'animal',
                'package',
                'face',
                'license_plate',
                'motion',
                'ring',
                'unknown'
            )
        `);
        await queryRunner.query(`
            CREATE TYPE "public"."description_status" AS ENUM('pending', 'complete', 'failed')
        `);
        await queryRunner.query(`
            CREATE TYPE "public"."event_source_type" AS ENUM('rtsp', 'usb', 'protect', 'mjpeg', 'api')
        `);
        await queryRunner.query(`
            CREATE TABLE "events" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "camera_id" uuid NOT NULL,
                "timestamp" TIMESTAMP WITH TIME ZONE NOT NULL,
                "detection_type" "public"."detection_type" NOT NULL,
                "objects_detected" text array NOT NULL DEFAULT '{}',
                "confidence" smallint,
                "description" text,
                "description_status" "public"."description_status" NOT NULL DEFAULT 'pending',
                "source_type" "public"."event_source_type" NOT NULL,
                "protect_event_id" character varying(100),
                "image_file" character varying(100),
                "provider_used" character varying(50),
                "model_used" character varying(100),
                "ai_confidence" smallint,
                "tokens_used" integer,
                "ai_cost_usd" numeric(12, 6),
                "response_time_ms" integer,
                "reanalysis_count" integer NOT NULL DEFAULT '0',
                "reanalysed_at" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_40731c7151fe4be3116e45ddf73" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE UNIQUE INDEX "events_protect_event_id_key" ON "events" ("protect_event_id")
            WHERE protect_event_id IS NOT NULL
        `);
        await queryRunner.query(`
            CREATE INDEX "events_confidence_idx" ON "events" ("confidence")
        `);
        await queryRunner.query(`
            CREATE INDEX "events_source_type_timestamp_idx" ON "events" ("source_type", "timestamp")
        `);
        await queryRunner.query(`
            CREATE INDEX "events_detection_type_timestamp_idx" ON "events" ("detection_type", "timestamp")
        `);
        await queryRunner.query(`
            CREATE INDEX "events_camera_id_timestamp_idx" ON "events" ("camera_id", "timestamp")
        `);
        await queryRunner.query(`
            CREATE INDEX "events_timestamp_id_idx" ON "events" ("timestamp", "id")
        `);
        await queryRunner.query(`
            CREATE TYPE "public"."camera_source_type" AS ENUM('rtsp', 'usb', 'protect', 'mjpeg')
        `);
        await queryRunner.query(`
            CREATE TYPE "public"."camera_status" AS ENUM(
                'stopped',
                'starting',
                'running',
                'reconnecting',
                'offline',
                'error'
            )
        `);
        await queryRunner.query(`
            CREATE TYPE "public"."motion_sensitivity" AS ENUM('low', 'medium', 'high')
        `);
        await queryRunner.query(`
            CREATE TABLE "cameras" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "name" character varying(100) NOT NULL,
                "source_type" "public"."camera_source_type" NOT NULL,
                "url" text,
                "username" character varying(200),
                "password_encrypted" text,
                "device" character varying(200),
                "protect_controller_id" uuid,
                "protect_camera_id" character varying(100),
                "enabled" boolean NOT NULL DEFAULT false,
                "status" "public"."camera_status" NOT NULL DEFAULT 'stopped',
                "status_message" text,
                "frame_rate" smallint NOT NULL DEFAULT '5',
                "motion_sensitivity" "public"."motion_sensitivity" NOT NULL DEFAULT 'medium',
                "motion_cooldown_seconds" integer NOT NULL DEFAULT '30',
                "detection_zones" jsonb NOT NULL DEFAULT '[]'::jsonb,
                "detection_types" text array NOT NULL DEFAULT '{person,vehicle,animal,package,face,license_plate,motion,ring,unknown}',
                "prompt_override" text,
                "last_frame_at" TIMESTAMP WITH TIME ZONE,
                "last_event_at" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_88b40b9817f9f422121f861e1e8" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE UNIQUE INDEX "cameras_name_key" ON "cameras" ("name")
        `);
        await queryRunner.query(`
            CREATE INDEX "cameras_protect_controller_id_idx" ON "cameras" ("protect_controller_id")
        `);
        await queryRunner.query(`
            CREATE TABLE "settings" (
                "key" character varying(100) NOT NULL,
                "value" jsonb NOT NULL,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_c8639b7626fa94ba8265628f214" PRIMARY KEY ("key")
            )
        `);
        await queryRunner.query(`
            ALTER TABLE "events"
            ADD CONSTRAINT "events_camera_id_fkey" FOREIGN KEY ("camera_id") REFERENCES "cameras"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
        await queryRunner.query(`
            CREATE INDEX "events_description_fts_idx" ON "events" USING GIN (to_tsvector('simple', coalesce("description", '')))
        `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            DROP INDEX "public"."events_description_fts_idx"
        `);
        await queryRunner.query(`
            ALTER TABLE "events" DROP CONSTRAINT "events_camera_id_fkey"
        `);
        await queryRunner.query(`
            DROP TABLE "settings"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."cameras_protect_controller_id_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."cameras_name_key"
        `);
        await queryRunner.query(`
            DROP TABLE "cameras"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."motion_sensitivity"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."camera_status"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."camera_source_type"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_timestamp_id_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_camera_id_timestamp_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_detection_type_timestamp_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_source_type_timestamp_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_confidence_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."events_protect_event_id_key"
        `);
        await queryRunner.query(`
            DROP TABLE "events"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."event_source_type"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."description_status"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."detection_type"
        `);
    }

}
