import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AppConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { HttpErrorFilter } from './common/errors/http-error.filter';
import { NotFoundHandler } from './common/http/not-found.handler';
import { AppValidationPipe } from './common/http/validation.pipe';
import { RedisModule } from './common/redis/redis.module';
import { AiModule } from './modules/ai/ai.module';
import { ApiKeysModule } from './modules/api-keys/api-keys.module';
import { AuthModule } from './modules/auth/auth.module';
import { SystemModule } from './modules/system/system.module';
import { CamerasModule } from './modules/cameras/cameras.module';
import { EventsModule } from './modules/events/events.module';
import { ProtectModule } from './modules/protect/protect.module';
import { RealtimeModule } from './modules/realtime/realtime.module';
import { SettingsModule } from './modules/settings/settings.module';
import { CredentialCacheModule } from './common/auth/credential-cache';
import { CryptoModule } from './common/crypto/crypto.module';
import { StorageModule } from './common/storage/image-store';
import { UsersModule } from './modules/users/users.module';

@Module({})
export class AppModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(config),
        DatabaseModule,
        RedisModule,
        CryptoModule,
        StorageModule,
        RealtimeModule,
        CredentialCacheModule,
        AuthModule,
        UsersModule,
        ApiKeysModule,
        SystemModule,
        SettingsModule,
        CamerasModule,
        EventsModule,
        AiModule,
        ProtectModule,
      ],
      providers: [
        { provide: APP_PIPE, useClass: AppValidationPipe },
        { provide: APP_FILTER, useClass: HttpErrorFilter },
        NotFoundHandler,
      ],
    };
  }
}
