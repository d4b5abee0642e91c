import { MigrationInterface, QueryRunner } from "typeorm";

export class ProtectControllers1795446650001 implements MigrationInterface {
    name = 'ProtectControllers1795446650001'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            CREATE TYPE "public"."protect_controller_status" AS ENUM(
                'connecting',
                'connected',
                'disconnected',
                'error'
            )
        `);
        await queryRunner.query(`
            CREATE TABLE "protect_controllers" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "name" character varying(100) NOT NULL,
                "host" character varying(255) NOT NULL,
                "port" integer NOT NULL DEFAULT '443',
                "username" character varying(200) NOT NULL,
                "password_encrypted" text NOT NULL,
                "verify_tls" boolean NOT NULL DEFAULT false,
                "enabled" boolean NOT NULL DEFAULT true,
                "status" "public"."protect_controller_status" NOT NULL DEFAULT 'disconnected',
                "status_message" text,
                "console_name" character varying(200),
                "version" character varying(50),
                "camera_count" integer,
                "last_connected_at" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_a606a1dd56c89992b05e948dc01" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE UNIQUE INDEX "protect_controllers_name_key" ON "protect_controllers" ("name")
        `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            DROP INDEX "public"."protect_controllers_name_key"
        `);
        await queryRunner.query(`
            DROP TABLE "protect_controllers"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."protect_controller_status"
        `);
    }

}
