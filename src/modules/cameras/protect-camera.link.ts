import { Injectable } from '@nestjs/common';
import { ConflictError } from '../../common/errors/app-errors';

/** What the Protect module does for cameras with `source_type: protect` (they are run by their controller). */
export interface ProtectCameraHandler {
  /** Throws a 422/409 AppError when the camera cannot adopt that Protect camera. */
  validate(controllerId: string, protectCameraId: string, exceptCameraId: string | null): Promise<void>;
  /** Brings the camera's status in line with its row and its controller (after create, update, start, stop, delete). */
  reconcile(cameraId: string): Promise<void>;
  /** The console's current snapshot of the camera. */
  snapshot(cameraId: string): Promise<Buffer>;
}

/**
 * The cameras module's door to the Protect module, which depends on cameras and events (so cameras cannot
 * import it): the Protect module registers its handler at start.
 */
@Injectable()
export class ProtectCameraLink {
  private handler: ProtectCameraHandler | null = null;

  register(handler: ProtectCameraHandler): void {
    this.handler = handler;
  }

  async validate(
    controllerId: string,
    protectCameraId: string,
    exceptCameraId: string | null,
  ): Promise<void> {
    await this.handler?.validate(controllerId, protectCameraId, exceptCameraId);
  }

  async reconcile(cameraId: string): Promise<void> {
    await this.handler?.reconcile(cameraId);
  }

  snapshot(cameraId: string): Promise<Buffer> {
    if (!this.handler) throw new ConflictError('Protect cameras are not available');
    return this.handler.snapshot(cameraId);
  }
}
