import type { Scope } from '../api-keys/entities/api-key.entity';
import type { DomainMessage } from './domain-events';

/**
 * The WebSocket protocol (decisions.md §5) as pure functions: which kinds a client may receive, how a
 * client message is read, and whether a message passes a client's subscription.
 */

/** The kinds sent to clients, each with the scope it needs (`admin` satisfies every scope). */
export const CLIENT_EVENT_SCOPES = {
  'event.created': 'read:events',
  'event.updated': 'read:events',
  'event.deleted': 'read:events',
  'notification.new': 'read:events',
  'camera.status': 'read:cameras',
  'camera.updated': 'read:cameras',
  'controller.status': 'admin',
} as const satisfies Record<string, Scope>;

export type ClientEventType = keyof typeof CLIENT_EVENT_SCOPES;

export const CLIENT_EVENT_TYPES = Object.keys(CLIENT_EVENT_SCOPES) as ClientEventType[];

/** At most this many camera ids in one subscribe message. */
export const MAX_SUBSCRIBED_CAMERAS = 1000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isClientEventType(type: string): type is ClientEventType {
  return Object.prototype.hasOwnProperty.call(CLIENT_EVENT_SCOPES, type);
}

/** The kinds these scopes allow, in the canonical order. */
export function allowedEventTypes(scopes: readonly Scope[]): ClientEventType[] {
  const admin = scopes.includes('admin');
  return CLIENT_EVENT_TYPES.filter((type) => admin || scopes.includes(CLIENT_EVENT_SCOPES[type]));
}

/** The camera a message is about, when it names one (camera.updated carries the camera itself). */
export function cameraIdOf(message: Pick<DomainMessage, 'type' | 'data'>): string | undefined {
  const data = message.data as Record<string, unknown>;
  const id = message.type === 'camera.updated' ? data.id : data.camera_id;
  return typeof id === 'string' ? id.toLowerCase() : undefined;
}

/** What a client asked for: `null` lists mean "all". */
export interface SubscriptionRequest {
  types: ClientEventType[] | null;
  cameraIds: string[] | null;
}

export type ClientMessage =
  | { kind: 'ping' }
  | { kind: 'subscribe'; request: SubscriptionRequest }
  | { kind: 'invalid'; detail: string };

const invalid = (detail: string): ClientMessage => ({ kind: 'invalid', detail });

/** Reads one text message from a client: the text `ping`, a subscribe action, or why it is invalid. */
export function parseClientMessage(text: string): ClientMessage {
  if (text.trim() === 'ping') return { kind: 'ping' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return invalid('Messages must be JSON objects (or the text "ping")');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalid('Messages must be JSON objects (or the text "ping")');
  }
  const body = value as Record<string, unknown>;
  if (body.action !== 'subscribe') {
    return invalid(
      body.action === undefined
        ? 'Missing "action"; the only action is "subscribe"'
        : `Unknown action ${JSON.stringify(body.action)}; the only action is "subscribe"`,
    );
  }
  const unknownFields = Object.keys(body).filter((k) => !['action', 'types', 'camera_ids'].includes(k));
  if (unknownFields.length > 0) {
    return invalid(`Unknown field(s): ${unknownFields.join(', ')}; expected "types" and "camera_ids"`);
  }

  let types: ClientEventType[] | null = null;
  if (body.types !== undefined && body.types !== null) {
    if (!Array.isArray(body.types) || body.types.some((t) => typeof t !== 'string')) {
      return invalid('"types" must be an array of strings');
    }
    const unknown = (body.types as string[]).filter((t) => !isClientEventType(t));
    if (unknown.length > 0) {
      return invalid(
        `Unknown type(s): ${unknown.map((t) => JSON.stringify(t)).join(', ')}; ` +
          `valid types are ${CLIENT_EVENT_TYPES.join(', ')}`,
      );
    }
    types = body.types.length === 0 ? null : [...new Set(body.types as ClientEventType[])];
  }

  let cameraIds: string[] | null = null;
  if (body.camera_ids !== undefined && body.camera_ids !== null) {
    if (!Array.isArray(body.camera_ids) || body.camera_ids.some((id) => typeof id !== 'string')) {
      return invalid('"camera_ids" must be an array of camera ids (UUIDs)');
    }
    const ids = body.camera_ids as string[];
    const malformed = ids.filter((id) => !UUID.test(id));
    if (malformed.length > 0) {
      return invalid(`"camera_ids" must be UUIDs; not a UUID: ${JSON.stringify(malformed[0])}`);
    }
    if (ids.length > MAX_SUBSCRIBED_CAMERAS) {
      return invalid(`"camera_ids" may name at most ${MAX_SUBSCRIBED_CAMERAS} cameras`);
    }
    cameraIds = ids.length === 0 ? null : [...new Set(ids.map((id) => id.toLowerCase()))];
  }
  return { kind: 'subscribe', request: { types, cameraIds } };
}

/** What a client receives: the kinds it asked for that its scopes allow, and its cameras (null: all). */
export interface Subscription {
  types: ReadonlySet<ClientEventType>;
  cameraIds: ReadonlySet<string> | null;
  /** Asked for but not allowed by the client's scopes (reported in the ack, never delivered). */
  ignoredTypes: ClientEventType[];
}

export function effectiveSubscription(
  request: SubscriptionRequest,
  allowed: readonly ClientEventType[],
): Subscription {
  const requested = request.types ?? allowed;
  return {
    types: new Set(requested.filter((t) => allowed.includes(t))),
    cameraIds: request.cameraIds ? new Set(request.cameraIds) : null,
    ignoredTypes: requested.filter((t) => !allowed.includes(t)),
  };
}

/** Whether a client with this subscription receives the message (a message without a camera passes). */
export function matches(
  subscription: Subscription,
  type: ClientEventType,
  cameraId: string | undefined,
): boolean {
  if (!subscription.types.has(type)) return false;
  return subscription.cameraIds === null || cameraId === undefined || subscription.cameraIds.has(cameraId);
}

/** The `subscribed` ack's data: the kinds actually delivered, the cameras ([] = all) and ignored kinds. */
export function subscriptionAck(subscription: Subscription): {
  types: ClientEventType[];
  camera_ids: string[];
  ignored_types: ClientEventType[];
} {
  return {
    types: CLIENT_EVENT_TYPES.filter((t) => subscription.types.has(t)),
    camera_ids: subscription.cameraIds ? [...subscription.cameraIds] : [],
    ignored_types: subscription.ignoredTypes,
  };
}
