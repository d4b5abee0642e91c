import 'reflect-metadata';
import { createApp } from './app.setup';
import { drainHttpServer } from './common/http/drain';
import { ConfigError, loadConfig } from './config/config';
import { startEmbeddedPostgres } from './database/embedded-postgres';
import { JsonLogger } from './common/logging/json-logger';
import { RealtimeGateway } from './modules/realtime/realtime.gateway';

async function bootstrap(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const logger = new JsonLogger(config.logLevel);
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(config.dataDir, (msg) => logger.log({ msg }, 'EmbeddedPostgres'));
  if (embedded) config.databaseUrl = embedded.url;

  const app = await createApp(config, { logger });
  // SIGTERM/SIGINT: close the WebSockets (1001; open ones would keep the HTTP server from closing), stop
  // accepting, let in-flight requests finish (Nest's close() would tear the modules and the database pool
  // down first), run the modules' shutdown hooks (usage flush, Redis, database pool), then stop the
  // embedded PostgreSQL.
  const stop = async (signal: string) => {
    logger.log({ msg: 'Shutting down', signal }, 'Bootstrap');
    await app.get(RealtimeGateway).shutdown();
    await drainHttpServer(app.getHttpServer());
    await app.close();
    await embedded?.stop();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
    process.once(signal, () => void stop(signal));
  await app.listen(config.port, config.host);
  logger.log(
    {
      msg: 'Vigil is listening',
      url: `${config.ssl ? 'https' : 'http'}://${config.host}:${config.port}`,
      docs: '/docs',
    },
    'Bootstrap',
  );
}

bootstrap().catch((error: unknown) => {
  process.stderr.write(`Vigil failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
