import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { dataSourceOptions } from './data-source';

/**
 * TypeORM on PostgreSQL with `synchronize: false`; committed migrations run at start-up.
 * By the time this module starts, `config.databaseUrl` is set (main.ts starts the embedded database when
 * DATABASE_URL is unset).
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        if (!config.databaseUrl)
          throw new Error('No database URL: main.ts must start the embedded database first');
        return {
          ...dataSourceOptions(config.databaseUrl),
          migrationsRun: true,
          retryAttempts: 3,
          retryDelay: 1000,
        };
      },
    }),
  ],
})
export class DatabaseModule {}
