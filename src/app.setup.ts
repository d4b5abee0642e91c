import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import cookieParser from 'cookie-parser';
import express, { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AppModule } from './app.module';
import { AppConfig } from './config/config';
import { jsonBody, requestId, requestLog } from './common/http/request-pipeline';
import { JsonLogger } from './common/logging/json-logger';
import { buildOpenApiDocument } from './docs/openapi';

export const API_PREFIX = 'api/v1';

/** The ReDoc page: the web component reads /openapi.json; the script is served from the redoc package. */
const REDOC_HTML = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Vigil API (ReDoc)</title><meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="/redoc/redoc.standalone.js"></script></body>
</html>`;

export interface CreateAppOptions {
  /** Do not instantiate providers (no database): enough to generate the OpenAPI document. */
  preview?: boolean;
  logger?: JsonLogger | false;
}

/**
 * Creates the Nest application with everything every entry point shares (main.ts, tests, the OpenAPI
 * script, benchmarks): security headers, CORS, request ids, logs, body parsing, the /api/v1 prefix and
 * the docs at /docs, /redoc and /openapi.json. The caller listens.
 */
export async function createApp(
  config: AppConfig,
  options: CreateAppOptions = {},
): Promise<NestExpressApplication> {
  const logger = options.logger ?? new JsonLogger(config.logLevel);
  const httpsOptions = config.ssl
    ? { cert: readFileSync(config.ssl.certFile), key: readFileSync(config.ssl.keyFile) }
    : undefined;
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(config), {
    bodyParser: false,
    logger: logger === false ? false : logger,
    bufferLogs: false,
    preview: options.preview,
    abortOnError: false,
    httpsOptions,
  });
  app.set('trust proxy', config.trustedProxies.length > 0 ? config.trustedProxies : false);
  app.disable('x-powered-by');
  app.use(requestId);
  app.use(requestLog);
  app.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'", "'unsafe-inline'"],
          imgSrc: ["'self'", 'data:', 'blob:'],
          fontSrc: ["'self'", 'data:'],
          workerSrc: ["'self'", 'blob:'],
          connectSrc: ["'self'"],
          objectSrc: ["'none'"],
          frameAncestors: ["'self'"],
          upgradeInsecureRequests: null,
        },
      },
      hsts: config.ssl !== undefined,
    }),
  );
  if (config.corsOrigins.length > 0) {
    const any = config.corsOrigins.includes('*');
    app.enableCors({
      origin: any ? true : config.corsOrigins,
      credentials: !any,
      exposedHeaders: [
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'Retry-After',
        'X-Request-Id',
      ],
    });
  }
  app.use(cookieParser());
  app.use(jsonBody);
  app.setGlobalPrefix(API_PREFIX);

  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Vigil API',
    useGlobalPrefix: false,
  });
  const redocBundle = join(dirname(require.resolve('redoc/package.json')), 'bundles');
  app.use(
    '/redoc/redoc.standalone.js',
    express.static(join(redocBundle, 'redoc.standalone.js'), { maxAge: '1d' }),
  );
  app.use('/redoc', (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' || (req.path !== '/' && req.path !== '')) return next();
    res.type('html').send(REDOC_HTML);
  });
  return app;
}

export type { INestApplication };
