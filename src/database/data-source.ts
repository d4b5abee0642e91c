import { AiCallEntity } from '../modules/ai/entities/ai-call.entity';
import { EventFeedbackEntity } from '../modules/ai/entities/event-feedback.entity';
import { ReanalysisRequestEntity } from '../modules/ai/entities/reanalysis-request.entity';
import { DataSourceOptions } from 'typeorm';
import { ApiKeyEntity } from '../modules/api-keys/entities/api-key.entity';
import { UserSessionEntity } from '../modules/auth/entities/user-session.entity';
import { UserEntity } from '../modules/users/entities/user.entity';
import { CameraEntity } from '../modules/cameras/entities/camera.entity';
import { EventEntity } from '../modules/events/entities/event.entity';
import { ProtectControllerEntity } from '../modules/protect/entities/protect-controller.entity';
import { SettingEntity } from '../modules/settings/entities/setting.entity';
import { MIGRATIONS } from './migrations';

export const ENTITIES = [
  UserEntity,
  UserSessionEntity,
  ApiKeyEntity,
  CameraEntity,
  EventEntity,
  SettingEntity,
  AiCallEntity,
  EventFeedbackEntity,
  ReanalysisRequestEntity,
  ProtectControllerEntity,
];

/** Options shared by the running service and the TypeORM CLI (`ormconfig.ts`). */
export function dataSourceOptions(url: string): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    // gen_random_uuid() is built into PostgreSQL 13+: no extension to install.
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    migrationsRun: false,
    synchronize: false,
    logging: false,
    extra: { max: 20, connectionTimeoutMillis: 5000 },
  };
}
