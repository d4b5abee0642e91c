import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './src/database/data-source';

/**
 * The data source for the TypeORM CLI (`npm run migration:generate|run`, see scripts/migration.js).
 * It reads DATABASE_URL; the service itself builds the same options in DatabaseModule.
 */
const url = process.env.DATABASE_URL;
if (!url) {
  throw new Error(
    'DATABASE_URL must be set for the TypeORM CLI (e.g. postgres://postgres@127.0.0.1:5432/vigil)',
  );
}

export default new DataSource(dataSourceOptions(url));
