import { Module } from '@nestjs/common';
import { createSecretKey } from 'node:crypto';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { AuthGuard } from '../../common/auth/auth.guard';
import { RateLimitHeadersInterceptor } from '../../common/rate-limit/rate-limit-headers.interceptor';
import { RateLimitService } from '../../common/rate-limit/rate-limit.service';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { UserEntity } from '../users/entities/user.entity';
import { UsersModule } from '../users/users.module';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { UserSessionEntity } from './entities/user-session.entity';

/** Login and sessions, plus the global AuthGuard and rate-limit header interceptor that guard every route. */
@Module({
  imports: [
    TypeOrmModule.forFeature([UserEntity, UserSessionEntity]),
    JwtModule.registerAsync({
      inject: [APP_CONFIG],
      // A KeyObject, not the string: given a string, jsonwebtoken first tries to parse it as a public key
      // on every verify (a failed createPublicKey per request).
      useFactory: (config: AppConfig) => ({
        secret: createSecretKey(Buffer.from(config.jwtSecret)),
        signOptions: { algorithm: 'HS256' },
      }),
    }),
    UsersModule,
    ApiKeysModule,
  ],
  controllers: [AuthController],
  providers: [
    AuthService,
    RateLimitService,
    AuthGuard,
    { provide: APP_GUARD, useExisting: AuthGuard },
    { provide: APP_INTERCEPTOR, useClass: RateLimitHeadersInterceptor },
  ],
  exports: [AuthService, AuthGuard],
})
export class AuthModule {}
