import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Request, Response } from 'express';

/**
 * Nest answers unknown paths under /api/v1 itself. Paths outside it that nothing serves (`/api/v2/x`,
 * `/events`) must also get the error envelope, not Express's HTML page (decisions.md §1), so a last
 * handler is added once every route is registered (bootstrap runs after Nest's own 404 handler).
 */
@Injectable()
export class NotFoundHandler implements OnApplicationBootstrap {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onApplicationBootstrap(): void {
    this.adapterHost.httpAdapter.use((_req: Request, res: Response) => {
      res.status(404).json({ detail: 'Not Found', status_code: 404 });
    });
  }
}
