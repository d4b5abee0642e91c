import { MigrationInterface, QueryRunner } from "typeorm";

export class Initial1795319328222 implements MigrationInterface {
    name = 'Initial1795319328222'

    public async up(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            CREATE TYPE "public"."user_role" AS ENUM('admin', 'viewer')
        `);
        await queryRunner.query(`
            CREATE TABLE "users" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "username" character varying(64) NOT NULL,
                "password_hash" character varying(100) NOT NULL,
                "role" "public"."user_role" NOT NULL,
                "is_active" boolean NOT NULL DEFAULT true,
                "last_login_at" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_a3ffb1c0c8416b9fc6f907b7433" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE UNIQUE INDEX "users_username_key" ON "users" ("username")
        `);
        await queryRunner.query(`
            CREATE TABLE "api_keys" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "name" character varying(100) NOT NULL,
                "prefix" character varying(12) NOT NULL,
                "key_hash" character(64) NOT NULL,
                "scopes" text array NOT NULL,
                "is_active" boolean NOT NULL DEFAULT true,
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                "expires_at" TIMESTAMP WITH TIME ZONE,
                "rate_limit_per_minute" integer NOT NULL DEFAULT '100',
                "usage_count" bigint NOT NULL DEFAULT '0',
                "last_used_at" TIMESTAMP WITH TIME ZONE,
                "last_used_ip" character varying(45),
                "created_by" uuid,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys" ("key_hash")
        `);
        await queryRunner.query(`
            CREATE INDEX "api_keys_created_at_idx" ON "api_keys" ("created_at")
        `);
        await queryRunner.query(`
            CREATE TABLE "user_sessions" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "user_id" uuid NOT NULL,
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_e93e031a5fed190d4789b6bfd83" PRIMARY KEY ("id")
            )
        `);
        await queryRunner.query(`
            CREATE INDEX "user_sessions_user_id_idx" ON "user_sessions" ("user_id")
        `);
        await queryRunner.query(`
            ALTER TABLE "api_keys"
            ADD CONSTRAINT "api_keys_created_by_fkey" FOREIGN KEY ("created_by") REFERENCES "users"("id") ON DELETE
            SET NULL ON UPDATE NO ACTION
        `);
        await queryRunner.query(`
            ALTER TABLE "user_sessions"
            ADD CONSTRAINT "user_sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    }

    public async down(queryRunner: QueryRunner): Promise<void> {
        await queryRunner.query(`
            ALTER TABLE "user_sessions" DROP CONSTRAINT "user_sessions_user_id_fkey"
        `);
        await queryRunner.query(`
            ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_created_by_fkey"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."user_sessions_user_id_idx"
        `);
        await queryRunner.query(`
            DROP TABLE "user_sessions"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."api_keys_created_at_idx"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."api_keys_key_hash_key"
        `);
        await queryRunner.query(`
            DROP TABLE "api_keys"
        `);
        await queryRunner.query(`
            DROP INDEX "public"."users_username_key"
        `);
        await queryRunner.query(`
            DROP TABLE "users"
        `);
        await queryRunner.query(`
            DROP TYPE "public"."user_role"
        `);
    }

}
