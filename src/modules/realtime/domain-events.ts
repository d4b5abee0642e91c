/**
 * The typed domain events. Published after the database transaction that caused them commits, through
 * DomainEventBus; the WebSocket gateway (and later notifications and MQTT) subscribe.
 */
export interface CameraStatusPayload {
  camera_id: string;
  camera_name: string;
  status: string;
  previous_status: string | null;
  status_message: string | null;
}

/** A Protect controller's connection status (WebSocket kind `controller.status`, admin only). */
export interface ControllerStatusPayload {
  controller_id: string;
  controller_name: string;
  status: string;
  previous_status: string | null;
  status_message: string | null;
}

export interface DomainEventMap {
  /** `data` is the event record as GET /events/{id} returns it. */
  'event.created': Record<string, unknown> & { id: string; camera_id: string };
  'event.updated': Record<string, unknown> & { id: string; camera_id: string };
  'event.deleted': { id: string; camera_id: string };
  'camera.status': CameraStatusPayload;
  /** `data` is the camera record as GET /cameras/{id} returns it (`deleted: true` when removed). */
  'camera.updated': Record<string, unknown> & { id: string; deleted?: boolean };
  'notification.new': Record<string, unknown> & { id: string };
  'controller.status': ControllerStatusPayload;
  /** Internal: a Protect controller was created, changed or deleted; the instance connected to it follows. */
  'protect.controller.changed': { id: string };
  /** Internal: settings changed (keys), so modules react without a restart. Never sent to clients. */
  'settings.changed': { keys: string[] };
  /** Internal: credentials ended; their WebSocket connections must close. Never sent to clients. */
  'auth.revoked': { api_key_id?: string; session_id?: string; user_id?: string };
}

export type DomainEventType = keyof DomainEventMap;

export interface DomainMessage<K extends DomainEventType = DomainEventType> {
  type: K;
  data: DomainEventMap[K];
  /** ISO 8601 UTC time of publication. */
  timestamp: string;
}
