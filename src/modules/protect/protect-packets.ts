import type { DetectionType } from '../events/entities/event.entity';

/*
 * What Vigil takes from the console's realtime update packets (header + payload, decoded by the library), as
 * pure functions. The console sends an `add` of model `event` when a detection starts (motion, a smart
 * detection zone/line, a doorbell ring), `update`s of that event as it goes on and when it ends (`end`, the
 * final score, late metadata such as a license plate), and `update`s of model `camera` when a camera connects
 * or disconnects.
 */

/** The parts of a decoded packet that are read here (the library's ProtectEventPacket). */
export interface ProtectPacket {
  header: { action?: unknown; modelKey?: unknown; id?: unknown; recordId?: unknown };
  payload: unknown;
}

/** Console smart detection names → Vigil detection types. */
const SMART_TYPES: Record<string, DetectionType> = {
  person: 'person',
  vehicle: 'vehicle',
  animal: 'animal',
  package: 'package',
  face: 'face',
  licensePlate: 'license_plate',
};

export type ProtectUpdate =
  | {
      kind: 'detection-start';
      protectEventId: string;
      protectCameraId: string;
      /** motion, ring, or the smart detection types (console order). */
      types: DetectionType[];
      /** 0..100; null when the console has no score yet (motion starts at 0). */
      score: number | null;
      start: Date;
      /** Whether the console already sent the end (a ring is one moment). */
      ended: boolean;
    }
  | {
      kind: 'detection-update';
      protectEventId: string;
      protectCameraId: string | null;
      /** Smart detection types the update names ([] when none). */
      types: DetectionType[];
      score: number | null;
      end: Date | null;
      licensePlate: string | null;
    }
  /** A camera the console added, or whose connection changed. */
  | { kind: 'camera-connection'; protectCameraId: string; online: boolean }
  /** A camera the console no longer has. */
  | { kind: 'camera-removed'; protectCameraId: string };

/** Vigil detection types of a console smart detection list (unknown kinds such as audio are left out). */
export function smartTypes(value: unknown): DetectionType[] {
  if (!Array.isArray(value)) return [];
  const types: DetectionType[] = [];
  for (const name of value) {
    const type = typeof name === 'string' ? SMART_TYPES[name] : undefined;
    if (type && !types.includes(type)) types.push(type);
  }
  return types;
}

const asRecord = (value: unknown): Record<string, unknown> | null =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;

const asString = (value: unknown): string | null =>
  typeof value === 'string' && value.length > 0 ? value : null;

function asScore(value: unknown): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return null;
  return Math.min(100, Math.round(value));
}

function asTime(value: unknown): Date | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** A license plate from an event's metadata: `metadata.licensePlate.name`, or a thumbnail's `name`. */
export function licensePlateOf(payload: Record<string, unknown>): string | null {
  const metadata = asRecord(payload.metadata);
  if (!metadata) return null;
  const plate = asString(asRecord(metadata.licensePlate)?.name);
  if (plate) return plate;
  if (Array.isArray(metadata.detectedThumbnails)) {
    for (const thumbnail of metadata.detectedThumbnails) {
      const t = asRecord(thumbnail);
      if (t && (t.type === 'vehicle' || t.type === 'licensePlate')) {
        const name = asString(t.name);
        if (name) return name;
      }
    }
  }
  return null;
}

/** The Vigil types of an event's kind: motion, ring, or its smart detections (null: not a detection). */
function eventTypes(payload: Record<string, unknown>): DetectionType[] | null {
  switch (payload.type) {
    case 'motion':
      return ['motion'];
    case 'ring':
      return ['ring'];
    case 'smartDetectZone':
    case 'smartDetectLine':
      return smartTypes(payload.smartDetectTypes);
    default:
      return null;
  }
}

/** What a packet means to Vigil, or null for everything else (statistics, other models, malformed packets). */
export function readPacket(packet: ProtectPacket): ProtectUpdate | null {
  const { action, modelKey, id } = packet.header ?? {};
  const payload = asRecord(packet.payload);
  const headerId = asString(id);
  if (!payload || !headerId) return null;

  if (modelKey === 'event' && action === 'add') {
    const types = eventTypes(payload);
    const cameraId = asString(payload.camera) ?? asString(payload.cameraId);
    const start = asTime(payload.start);
    if (!types || types.length === 0 || !cameraId || !start) return null;
    return {
      kind: 'detection-start',
      protectEventId: asString(payload.id) ?? headerId,
      protectCameraId: cameraId,
      types,
      score: asScore(payload.score),
      start,
      ended: asTime(payload.end) !== null,
    };
  }

  if (modelKey === 'event' && action === 'update') {
    return {
      kind: 'detection-update',
      protectEventId: headerId,
      protectCameraId:
        asString(packet.header.recordId) ?? asString(payload.camera) ?? asString(payload.cameraId),
      types: smartTypes(payload.smartDetectTypes),
      score: asScore(payload.score),
      end: asTime(payload.end),
      licensePlate: licensePlateOf(payload),
    };
  }

  if (modelKey === 'camera' && action === 'remove')
    return { kind: 'camera-removed', protectCameraId: headerId };
  if (
    modelKey === 'camera' &&
    (action === 'update' || action === 'add') &&
    typeof payload.isConnected === 'boolean'
  ) {
    return { kind: 'camera-connection', protectCameraId: headerId, online: payload.isConnected };
  }
  return null;
}

/**
 * Applies a realtime `camera` packet to a bootstrap camera list (the library never does): an `add` appends
 * the camera, an `update` deep-merges its changes (name, connection, features), a `remove` drops it.
 */
export function applyCameraPacket(cameras: Record<string, unknown>[], packet: ProtectPacket): void {
  const { action, modelKey, id } = packet.header ?? {};
  const payload = asRecord(packet.payload);
  if (modelKey !== 'camera' || typeof id !== 'string') return;
  const index = cameras.findIndex((camera) => camera.id === id);
  if (action === 'remove') {
    if (index >= 0) cameras.splice(index, 1);
  } else if (payload && index >= 0 && action === 'update') {
    mergeDeep(cameras[index], payload);
  } else if (payload && index < 0 && action === 'add' && payload.id === id) {
    cameras.push(structuredClone(payload));
  }
}

function mergeDeep(target: Record<string, unknown>, patch: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(patch)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    const current = asRecord(target[key]);
    const next = asRecord(value);
    if (current && next) mergeDeep(current, next);
    else target[key] = structuredClone(value);
  }
}

/**
 * The detection type an event gets on a camera that makes events of `allowed` types: the first of the
 * detection's types (console order) that is allowed, or null when none is (the detection is ignored).
 */
export function chooseDetectionType(
  types: DetectionType[],
  allowed: readonly DetectionType[],
): DetectionType | null {
  return types.find((type) => allowed.includes(type)) ?? null;
}

/** `objects_detected` of a Protect event: its smart detection types, and the license plate as `plate:<text>`. */
export function protectObjects(types: DetectionType[], licensePlate: string | null): string[] {
  const objects = types.filter((type) => type !== 'motion' && type !== 'ring') as string[];
  if (licensePlate) objects.push(`plate:${licensePlate}`);
  return objects;
}
