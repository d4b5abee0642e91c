import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { deflateSync } from 'node:zlib';
import { WebSocketServer, type WebSocket } from 'ws';
import { trackFake, untrackFake, type StoppableFake } from './fake-lifecycle';

/** The object classes of Protect's smart detections, as they appear in `smartDetectTypes`. */
export type FakeSmartDetectType = 'person' | 'vehicle' | 'animal' | 'package' | 'face' | 'licensePlate';

/** Camera models the fake knows (market names); each sets `type`, doorbell flags and smart detections. */
export type FakeProtectModel =
  'G4 Bullet' | 'G4 Dome' | 'G4 Doorbell' | 'G4 Doorbell Pro' | 'G5 Turret Ultra' | 'AI Pro';

/**
 * How the server answers:
 * - `protect`: a UniFi OS console with the Protect application (the default);
 * - `plain-https`: some other HTTPS server (a router page, a NAS): `GET /` is an HTML page without a CSRF
 *   token, every other path 404 with HTML, WebSocket upgrades 404;
 * - `unifi-os-without-protect`: UniFi OS (login works) on which Protect is not installed: everything under
 *   `/proxy/protect/` answers 404.
 */
export type FakeProtectConsoleMode = 'protect' | 'plain-https' | 'unifi-os-without-protect';

/** Payload formats of the realtime update packets (1, 2 and 3 on the wire). */
export type FakeProtectPayloadFormat = 'json' | 'string' | 'buffer';

export interface FakeProtectCameraInit {
  /** 24 hex digits like Protect's ids; random when absent. */
  id?: string;
  name: string;
  /** Default `G4 Bullet`. */
  model?: FakeProtectModel;
  /** 12 upper-case hex digits; random when absent. */
  mac?: string;
  /** The camera's own address. Default 192.168.1.(100 + n). */
  host?: string;
  /** Default true (`state: 'CONNECTED'`). */
  isConnected?: boolean;
  /** `featureFlags.smartDetectTypes`; the model's list when absent. */
  smartDetectTypes?: FakeSmartDetectType[];
  /** Merged (deeply) into the camera JSON last, for fields the fake does not set itself. */
  extra?: Record<string, unknown>;
}

/** A camera as it appears in the bootstrap (`cameras[]`); the fields below are always there. */
export type FakeProtectCameraJson = Record<string, unknown> & {
  id: string;
  modelKey: 'camera';
  name: string;
  type: string;
  marketName: string;
  mac: string;
  host: string;
  isConnected: boolean;
  state: string;
  featureFlags: Record<string, unknown> & {
    smartDetectTypes: string[];
    isDoorbell: boolean;
    hasChime: boolean;
    hasPackageCamera: boolean;
  };
};

export interface FakeProtectConsoleOptions {
  /** Default `vigil`. */
  username?: string;
  /** Default `vigil-secret`. */
  password?: string;
  /** `nvr.name`. Default `Vigil Test NVR`. */
  nvrName?: string;
  /** `nvr.version`, the Protect application's version. Default `5.3.48`. */
  nvrVersion?: string;
  /** `nvr.firmwareVersion`, the UniFi OS version. Default `4.2.12`. */
  firmwareVersion?: string;
  /** `nvr.marketName` / `nvr.type`. Default `UNVR`. */
  nvrModel?: string;
  /** Default: `Driveway` (G4 Bullet) and `Front Door` (G4 Doorbell). Pass `[]` for none. */
  cameras?: FakeProtectCameraInit[];
  /** zlib-deflate both frames of every update packet, as real consoles do. Default true. */
  deflate?: boolean;
  /**
   * The user has write permission on cameras (the library's `isAdminUser`, needed for `updateDevice` and
   * `enableRtsp`). Default true.
   */
  admin?: boolean;
  /**
   * Logins without an `X-CSRF-Token` issued by `GET /` get 403, as on consoles that want the token on the login
   * itself (the library then fetches `/` and retries). Default false.
   */
  requireCsrfForLogin?: boolean;
  /** Field of event payloads that names the camera: `camera` (older and most consoles) or `cameraId`. */
  eventCameraKey?: 'camera' | 'cameraId';
  /** When > 0, an `nvr` update packet (`lastSeen`, `uptime`) goes out every this many ms, like a live console. */
  heartbeatMs?: number;
  /** When > 0, WebSocket ping frames go out every this many ms. Default 0 (none). */
  pingIntervalMs?: number;
  /** The JPEG every snapshot answers with. Default `FAKE_PROTECT_SNAPSHOT_JPEG` (32x24). */
  snapshotJpeg?: Buffer;
  /** Default `protect`. */
  mode?: FakeProtectConsoleMode;
}

/** One HTTP request as the fake received it. */
export interface FakeProtectRequest {
  method: string;
  /** Without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or null. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  at: number;
}

/** What an emit method sent, to correlate with what the client received. */
export interface FakeProtectEmission {
  /** The Protect event's id (`header.id` of the `event` packets), null for pure camera updates. */
  eventId: string | null;
  cameraId: string;
  /** Date.now() when the packets were written. */
  sentAt: number;
  /** Event start (ms), for event-creating emits. */
  start?: number;
  /** Event end (ms), for event-ending emits. */
  end?: number;
  /** `header.newUpdateId` of each packet sent, in order. */
  updateIds: string[];
  /** WebSocket clients the packets were written to: 0 while silent or when nobody is connected. */
  delivered: number;
}

export interface FakeSmartDetectionEnd {
  /** Final score. Default: the start score. */
  score?: number;
  /** A plate: sets `metadata.licensePlate` and a `vehicle` entry with this `name` in `detectedThumbnails`. */
  licensePlate?: string;
  /** Replaces the generated `metadata.detectedThumbnails`. */
  detectedThumbnails?: Record<string, unknown>[];
  /** Merged into `metadata` last. */
  metadata?: Record<string, unknown>;
}

interface FakeProtectEventState {
  id: string;
  type: string;
  cameraId: string;
  start: number;
  end: number | null;
  score: number;
  smartDetectTypes: string[];
}

interface Session {
  token: string;
  csrfToken: string;
  userId: string;
}

interface WsClient {
  ws: WebSocket;
  lastUpdateId: string;
  connectedAt: number;
}

interface ModelInfo {
  type: string;
  doorbell: boolean;
  packageCamera: boolean;
  smartDetectTypes: FakeSmartDetectType[];
}

const MODELS: Record<FakeProtectModel, ModelInfo> = {
  'G4 Bullet': {
    type: 'UVC G4 Bullet',
    doorbell: false,
    packageCamera: false,
    smartDetectTypes: ['person', 'vehicle'],
  },
  'G4 Dome': {
    type: 'UVC G4 Dome',
    doorbell: false,
    packageCamera: false,
    smartDetectTypes: ['person', 'vehicle'],
  },
  'G4 Doorbell': {
    type: 'UVC G4 Doorbell',
    doorbell: true,
    packageCamera: false,
    smartDetectTypes: ['person'],
  },
  'G4 Doorbell Pro': {
    type: 'UVC G4 Doorbell Pro',
    doorbell: true,
    packageCamera: true,
    smartDetectTypes: ['person', 'vehicle', 'package'],
  },
  'G5 Turret Ultra': {
    type: 'UVC G5 Turret Ultra',
    doorbell: false,
    packageCamera: false,
    smartDetectTypes: ['person', 'vehicle', 'animal'],
  },
  'AI Pro': {
    type: 'UVC AI Pro',
    doorbell: false,
    packageCamera: false,
    smartDetectTypes: ['person', 'vehicle', 'animal', 'face', 'licensePlate'],
  },
};

const DEFAULT_CAMERAS: FakeProtectCameraInit[] = [
  { name: 'Driveway', model: 'G4 Bullet' },
  { name: 'Front Door', model: 'G4 Doorbell' },
];

/** A valid 32x24 baseline JPEG (ffmpeg testsrc), what every snapshot returns unless told otherwise. */
export const FAKE_PROTECT_SNAPSHOT_JPEG = Buffer.from(
  [
    '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgUFBcUFxsbGxsbGyAeICEhISAgICAhISEkJCQq',
    'KiokJCQhISQkKCgqKi4vLisrKisvLzIyMjw8OTlGRkhWVmf/xACWAAEBAQEBAAAAAAAAAAAAAAAHBgUAAQEBAAIDAQEAAAAA',
    'AAAAAAAABwUGAAQCCAMQAAECAwYDBQkBAAAAAAAAAAECEQAEA0KCMcESBSIhMxNBUYGzsYN0FWE0cjUyFBEAAQEEBwYDBQkB',
    'AAAAAAAAAQIAEQQDwiHBEoExBUJBglFDIhNhM7M0MhUjkhSxY5HRhHJ0Fv/AABEIABgAIAMBEgACEgADEgD/2gAMAwEAAhED',
    'EQA/AIbZpU1zUWoHswUh2PEefCD9HGrvDjxiy2L7E/EVPTpR2mQJyg/JOY5v3fu0nD7WFra87VFabJWJY+rOcEKLrqAl71O3',
    'msXRlvOTjR9X6PHRaKnrF7KPJ6xeyhRhgEggAAAAACoADcG7h9rC1mjVUhIkJSAAAsAAOAAuuAHJu9X6PHRZ5nrF7KOnrF7K',
    'PFcPtYWtkPtYWsU6v0eOi2av0eOi2Ts08FVDL1DxqS6CSOIIxTzLlTF+TuAScIP9s/aSfvvSVDFLnKmJAVWU7+b+f6ZtpQ+1',
    'hayHF6dJgZypkntTPrMt3ahSc7vIG98O7dVULRq/R46Lau1TUlTpGkFtxamZf9KADuR4JHe3KCqRt3c4h5k2PlqHhlwUfyqW',
    'TTERs42NV4uBhYxKlSpZmeECajMeH8g8FRLsgCWtGkdbgpMn1/l+odphz09XzwiNnrF7KLfB/Onm/lU/3exlCH2sLWJNQ+bX',
    'k+Jl3XPQ8n5YZsjav0eOiyTuH+/UnTg5bp+cWE9YvZQHQ3/PuL8/5LDkPtYWsRKvfT+/ed3Lyf6WDffV+jx0WOpSTmipFegj',
    'jQ+lTpDawRgssXD90Ku1dEfhT9hj0DORCpQ+QHXsvjr+22mr0pP9B+AZoMVBz1qlT1hcySXKAvdpO58sXSaq6y4hxYile/aj',
    '/oX7SY3/2Q==',
  ].join(''),
  'base64',
);

const UPDATES_PATH = '/proxy/protect/ws/updates';
const PACKET_HEADER_SIZE = 8;
const FRAME_TYPE = { action: 1, payload: 2 } as const;
const PAYLOAD_FORMAT: Record<FakeProtectPayloadFormat, number> = { json: 1, string: 2, buffer: 3 };
const ADMIN_PERMISSIONS = [
  'nvr:read:*',
  'liveview:create',
  'user:read,write,delete:$',
  'nvr:write,delete:*',
  'camera:create,read,write,delete,readmedia,deletemedia:*',
  'light:create,read,write,delete:*',
  'sensor:create,read,write,delete:*',
  'viewer:create,read,write,delete:*',
  'chime:create,read,write,delete:*',
];
const VIEWER_PERMISSIONS = [
  'nvr:read:*',
  'liveview:create',
  'user:read,write,delete:$',
  'camera:read,readmedia:*',
];
const NOT_FOUND_HTML =
  '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>';
const PLAIN_INDEX_HTML =
  '<!doctype html><html><head><title>Router</title></head><body>It works!</body></html>';
const UNIFI_OS_INDEX_HTML = '<!doctype html><html><head><title>UniFi OS</title></head><body></body></html>';

/**
 * Encodes one realtime update packet the way UniFi Protect sends it on `/proxy/protect/ws/updates`: an action
 * frame (JSON header) followed by a payload frame. Each frame is an 8-byte header — packet type (1 action,
 * 2 payload), payload format (1 JSON, 2 UTF-8 string, 3 buffer), deflated flag, a zero byte, payload size
 * (uint32 big-endian) — then the (optionally zlib-deflated) payload.
 */
export function encodeProtectPacket(
  header: Record<string, unknown>,
  payload: unknown,
  options: { deflate?: boolean; format?: FakeProtectPayloadFormat } = {},
): Buffer {
  const deflate = options.deflate ?? true;
  const format =
    options.format ?? (Buffer.isBuffer(payload) ? 'buffer' : typeof payload === 'string' ? 'string' : 'json');
  let body: Buffer;
  if (format === 'json') body = Buffer.from(JSON.stringify(payload ?? null), 'utf8');
  else if (format === 'string') body = Buffer.from(String(payload), 'utf8');
  else body = Buffer.isBuffer(payload) ? payload : Buffer.from(String(payload), 'utf8');
  return Buffer.concat([
    encodeFrame(FRAME_TYPE.action, PAYLOAD_FORMAT.json, Buffer.from(JSON.stringify(header), 'utf8'), deflate),
    encodeFrame(FRAME_TYPE.payload, PAYLOAD_FORMAT[format], body, deflate),
  ]);
}

function encodeFrame(type: number, format: number, data: Buffer, deflate: boolean): Buffer {
  const payload = deflate ? deflateSync(data) : data;
  const head = Buffer.alloc(PACKET_HEADER_SIZE);
  head.writeUInt8(type, 0);
  head.writeUInt8(format, 1);
  head.writeUInt8(deflate ? 1 : 0, 2);
  head.writeUInt8(0, 3);
  head.writeUInt32BE(payload.length, 4);
  return Buffer.concat([head, payload]);
}

/**
 * A fake UniFi OS console running UniFi Protect on 127.0.0.1, over real HTTPS (HTTP/2 and HTTP/1.1, with a
 * self-signed certificate made at start) and WSS, close enough that the real `unifi-protect` client
 * (`ProtectApi`) works against it unchanged: cookie + CSRF login, bootstrap, snapshots, and the binary
 * realtime updates WebSocket. Tests script cameras, events and failures (dropped or silent sockets, refused
 * logins, a non-Protect server, hanging requests).
 */
export class FakeProtectConsole {
  /** Every HTTP request received, in order (WebSocket upgrades are not included). */
  readonly requests: FakeProtectRequest[] = [];
  /** The `lastUpdateId` query parameter of every accepted updates WebSocket, in order. */
  readonly wsLastUpdateIds: string[] = [];
  private readonly cameras = new Map<string, FakeProtectCameraJson>();
  private readonly events = new Map<string, FakeProtectEventState>();
  private readonly sessions = new Map<string, Session>();
  private readonly issuedCsrfTokens = new Set<string>();
  private readonly clients = new Set<WsClient>();
  private readonly sockets = new Set<Socket>();
  private readonly hung = new Set<Http2ServerResponse>();
  private readonly snapshotCounts = new Map<string, number>();
  private readonly snapshotFailures = new Map<string, number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly jwtSecret = randomBytes(32);
  private readonly tracked: StoppableFake = { stop: () => this.stop() };
  private readonly wss = new WebSocketServer({ noServer: true, autoPong: false });
  private readonly nvr: Record<string, unknown>;
  private readonly user: Record<string, unknown>;
  private readonly startedAt = Date.now();
  private readonly snapshotJpeg: Buffer;
  private username: string;
  private password: string;
  private mode: FakeProtectConsoleMode;
  private deflate: boolean;
  private silent = false;
  private hanging = false;
  private loginRefusal: number | null = null;
  private wsRefusal: number | null = null;
  private lastUpdateId: string = randomUUID();
  private counters = { loginAttempts: 0, logins: 0, bootstrapRequests: 0, wsConnections: 0, pongs: 0 };
  private stopping: Promise<void> | null = null;
  private server: Http2SecureServer | null = null;
  private boundPort = 0;

  private constructor(
    private readonly options: FakeProtectConsoleOptions,
    readonly certificatePem: string,
    private readonly keyPem: string,
  ) {
    this.username = options.username ?? 'vigil';
    this.password = options.password ?? 'vigil-secret';
    this.mode = options.mode ?? 'protect';
    this.deflate = options.deflate ?? true;
    this.snapshotJpeg = options.snapshotJpeg ?? FAKE_PROTECT_SNAPSHOT_JPEG;
    const nvrMac = randomMac();
    const userId = objectId();
    this.user = {
      id: userId,
      modelKey: 'user',
      name: this.username,
      firstName: this.username,
      lastName: '',
      localUsername: this.username,
      email: `${this.username}@example.invalid`,
      isOwner: false,
      enableNotifications: false,
      hasAcceptedInvite: true,
      role: (options.admin ?? true) ? 'admin' : 'viewer',
      permissions: [],
      allPermissions: (options.admin ?? true) ? ADMIN_PERMISSIONS : VIEWER_PERMISSIONS,
      groups: [],
      alertRules: [],
      location: { isAway: false, latitude: null, longitude: null },
      settings: { flags: [] },
      syncSso: false,
    };
    const model = options.nvrModel ?? 'UNVR';
    this.nvr = {
      id: objectId(),
      modelKey: 'nvr',
      name: options.nvrName ?? 'Vigil Test NVR',
      type: model,
      marketName: model,
      mac: nvrMac,
      host: '127.0.0.1',
      hosts: ['127.0.0.1'],
      hardwareId: randomUUID(),
      hardwarePlatform: 'al324',
      hardwareRevision: '6',
      version: options.nvrVersion ?? '5.3.48',
      firmwareVersion: options.firmwareVersion ?? '4.2.12',
      uiVersion: options.nvrVersion ?? '5.3.48',
      ucoreVersion: '4.3.10',
      isHardware: true,
      isSetup: true,
      isUpdating: false,
      isRecordingDisabled: false,
      isRecordingMotionOnly: false,
      isAway: false,
      hasGateway: false,
      upSince: this.startedAt - 86_400_000,
      uptime: 86_400,
      lastSeen: this.startedAt,
      lastUpdateAt: null,
      timezone: 'Europe/Berlin',
      timeFormat: '24h',
      temperatureUnit: 'C',
      countryCode: 'DE',
      releaseChannel: 'release',
      canAutoUpdate: true,
      availableUpdate: null,
      errorCode: null,
      recordingRetentionDurationMs: null,
      enableAutomaticBackups: true,
      enableStatsReporting: false,
      enableCrashReporting: false,
      disableAudio: false,
      analyticsData: 'anonymous',
      anonymouseDeviceId: randomUUID(),
      cameraUtilization: 10,
      isStatsGatheringEnabled: true,
      skipFirmwareUpdate: false,
      smartDetectAgreement: { status: 'agreed', lastUpdateAt: null },
      smartDetection: { enable: true, faceRecognition: false, licensePlateRecognition: false },
      featureFlags: {
        beta: false,
        dev: false,
        notificationsV2: true,
        homekitPaired: false,
        ulpRoleManagement: false,
        detectionLabels: true,
        hasTwoWayAudioMediaStreams: true,
      },
      doorbellSettings: {
        defaultMessageText: 'Welcome',
        defaultMessageResetTimeoutMs: 60_000,
        customMessages: [],
        customImages: [],
        allMessages: [
          { type: 'LEAVE_PACKAGE_AT_DOOR', text: 'LEAVE PACKAGE AT DOOR' },
          { type: 'DO_NOT_DISTURB', text: 'DO NOT DISTURB' },
        ],
      },
      ports: { https: 7443, http: 7080, rtsp: 7447, rtsps: 7441, rtmp: 1935, liveWs: 7445, liveWss: 7446 },
      locationSettings: { isAway: false, isGeofencingEnabled: false, latitude: 0, longitude: 0, radius: 200 },
      systemInfo: {
        cpu: { averageLoad: 0.2, temperature: 48 },
        memory: { available: 2_000_000, free: 1_000_000, total: 4_000_000 },
        storage: { available: 3e12, size: 4e12, used: 1e12, isRecycling: false, type: 'raid', devices: [] },
        tmpfs: { available: 200_000, total: 256_000, used: 56_000, path: '/var/opt/unifi-protect/tmp' },
      },
      storageStats: { utilization: 25, capacity: 1_000_000_000, remainingCapacity: 750_000_000 },
    };
    let n = 0;
    for (const init of options.cameras ?? DEFAULT_CAMERAS) this.insertCamera(init, n++);
  }

  /** Makes a certificate, listens on 127.0.0.1 (a free port) and registers with `stopAllFakeCameras()`. */
  static async start(options: FakeProtectConsoleOptions = {}): Promise<FakeProtectConsole> {
    const { certPem, keyPem } = makeSelfSignedCertificate();
    const fake = new FakeProtectConsole(options, certPem, keyPem);
    await fake.listen();
    trackFake(fake.tracked);
    return fake;
  }

  // ---- addresses and counters ----------------------------------------------------------------------------

  get port(): number {
    return this.boundPort;
  }

  /** What `ProtectApi.login()` takes as the console address: `127.0.0.1:<port>`. */
  get address(): string {
    return `127.0.0.1:${this.boundPort}`;
  }

  /** SHA-256 fingerprint of the served certificate, `AA:BB:...` as Node's `fingerprint256`. */
  get fingerprint256(): string {
    return new X509Certificate(this.certificatePem).fingerprint256;
  }

  /** `POST /api/auth/login` requests, whatever their outcome. */
  get loginAttempts(): number {
    return this.counters.loginAttempts;
  }

  /** Logins that succeeded (a session cookie was issued). */
  get logins(): number {
    return this.counters.logins;
  }

  /** `GET /proxy/protect/api/bootstrap` requests that were answered with a bootstrap. */
  get bootstrapRequests(): number {
    return this.counters.bootstrapRequests;
  }

  /** Updates WebSockets open right now. */
  get wsClientCount(): number {
    return this.clients.size;
  }

  /** Updates WebSockets accepted since start. */
  get wsConnectionsTotal(): number {
    return this.counters.wsConnections;
  }

  /** Pong frames received from clients (answers to `pingIntervalMs` pings). */
  get wsPongsReceived(): number {
    return this.counters.pongs;
  }

  /** The bootstrap's current `lastUpdateId` (the `newUpdateId` of the last packet sent). */
  get currentLastUpdateId(): string {
    return this.lastUpdateId;
  }

  get nvrId(): string {
    return this.nvr.id as string;
  }

  /** Snapshot requests for this camera (answered or not, package snapshots included). */
  snapshotRequests(cameraId: string): number {
    return this.snapshotCounts.get(cameraId) ?? 0;
  }

  /** The bootstrap exactly as `GET /proxy/protect/api/bootstrap` would return it now. */
  bootstrap(): Record<string, unknown> {
    return structuredClone(this.buildBootstrap());
  }

  // ---- cameras -----------------------------------------------------------------------------------------

  /** Copies of the cameras, in bootstrap order. */
  listCameras(): FakeProtectCameraJson[] {
    return [...this.cameras.values()].map((camera) => structuredClone(camera));
  }

  camera(id: string): FakeProtectCameraJson {
    return structuredClone(this.requireCamera(id));
  }

  /** First camera with this name (throws when there is none). */
  cameraByName(name: string): FakeProtectCameraJson {
    const camera = [...this.cameras.values()].find((c) => c.name === name);
    if (!camera) throw new Error(`fake Protect console has no camera named ${JSON.stringify(name)}`);
    return structuredClone(camera);
  }

  /**
   * Adds a camera to the bootstrap. With `emit`, clients also get the `add`/`camera` packet a console sends
   * when a camera is adopted.
   */
  addCamera(init: FakeProtectCameraInit, options: { emit?: boolean } = {}): FakeProtectCameraJson {
    const camera = this.insertCamera(init, this.cameras.size);
    if (options.emit) this.send([this.packet('add', 'camera', camera.id, camera)]);
    return structuredClone(camera);
  }

  /**
   * Deep-merges `patch` into the camera and (unless `emit: false`) sends it as an `update`/`camera` packet,
   * e.g. `{ name: 'Garage' }`.
   */
  updateCamera(
    id: string,
    patch: Record<string, unknown>,
    options: { emit?: boolean } = {},
  ): FakeProtectEmission {
    this.requireCamera(id);
    this.patchCamera(id, patch);
    const packets = options.emit === false ? [] : [this.packet('update', 'camera', id, patch)];
    return this.emission(null, id, packets);
  }

  /** Removes the camera; with `emit`, clients get a `remove`/`camera` packet. */
  removeCamera(id: string, options: { emit?: boolean } = {}): FakeProtectEmission {
    this.requireCamera(id);
    this.cameras.delete(id);
    const packets = options.emit ? [this.packet('remove', 'camera', id, {})] : [];
    return this.emission(null, id, packets);
  }

  /**
   * The camera goes offline or comes back: `update`/`camera` with `isConnected` and `state`
   * (`DISCONNECTED` / `CONNECTED`), plus `lastDisconnect` or `connectedSince` and `upSince`.
   */
  setCameraConnected(id: string, connected: boolean): FakeProtectEmission {
    this.requireCamera(id);
    const now = Date.now();
    const patch: Record<string, unknown> = connected
      ? { isConnected: true, state: 'CONNECTED', connectedSince: now, upSince: now, lastSeen: now }
      : {
          isConnected: false,
          state: 'DISCONNECTED',
          lastDisconnect: now,
          connectedSince: null,
          lastSeen: now,
        };
    this.patchCamera(id, patch);
    return this.emission(null, id, [this.packet('update', 'camera', id, patch)]);
  }

  // ---- events ------------------------------------------------------------------------------------------

  /**
   * Motion starts: `add`/`event` (`type: 'motion'`, `start`, `score`, `smartDetectTypes: []`, camera id), then
   * `update`/`camera` with `isMotionDetected: true` and `lastMotion: start`. End it with `endMotion(eventId)`.
   */
  startMotion(cameraId: string, options: { score?: number } = {}): FakeProtectEmission {
    this.requireCamera(cameraId);
    const event = this.createEvent(cameraId, 'motion', options.score ?? 0, []);
    const cameraPatch = { isMotionDetected: true, lastMotion: event.start };
    this.patchCamera(cameraId, cameraPatch);
    return this.emission(event.id, cameraId, [
      this.packet('add', 'event', event.id, this.eventPayload(event)),
      this.packet('update', 'camera', cameraId, cameraPatch),
    ]);
  }

  /** Motion ends: `update`/`event` with `end` and `score`, then `update`/`camera` with `isMotionDetected: false`. */
  endMotion(eventId: string, options: { score?: number } = {}): FakeProtectEmission {
    const event = this.requireOpenEvent(eventId, 'motion');
    event.end = Date.now();
    event.score = options.score ?? Math.max(event.score, 60);
    const cameraPatch = { isMotionDetected: false };
    this.patchCamera(event.cameraId, cameraPatch);
    return this.emission(event.id, event.cameraId, [
      this.packet('update', 'event', event.id, { end: event.end, score: event.score }, event.cameraId),
      this.packet('update', 'camera', event.cameraId, cameraPatch),
    ]);
  }

  /**
   * A smart detection starts: `add`/`event` with `type: 'smartDetectZone'`, `smartDetectTypes` and `score`,
   * then `update`/`camera` with `isSmartDetected: true`. End it with `endSmartDetection(eventId)`.
   */
  startSmartDetection(
    cameraId: string,
    types: FakeSmartDetectType[],
    options: { score?: number } = {},
  ): FakeProtectEmission {
    this.requireCamera(cameraId);
    if (types.length === 0) throw new Error('a smart detection needs at least one smartDetectType');
    const event = this.createEvent(cameraId, 'smartDetectZone', options.score ?? 80, [...types]);
    const cameraPatch = { isSmartDetected: true };
    this.patchCamera(cameraId, cameraPatch);
    return this.emission(event.id, cameraId, [
      this.packet('add', 'event', event.id, this.eventPayload(event)),
      this.packet('update', 'camera', cameraId, cameraPatch),
    ]);
  }

  /**
   * A smart detection ends: `update`/`event` with `end`, `score`, `smartDetectTypes` and `metadata`
   * (`detectedThumbnails`, and `licensePlate: {name, confidenceLevel}` when a plate is given), then
   * `update`/`camera` with `isSmartDetected: false`.
   */
  endSmartDetection(eventId: string, options: FakeSmartDetectionEnd = {}): FakeProtectEmission {
    const event = this.requireOpenEvent(eventId, 'smartDetectZone');
    event.end = Date.now();
    if (options.score !== undefined) event.score = options.score;
    const thumbnails =
      options.detectedThumbnails ??
      event.smartDetectTypes.map((type, index) => ({
        type: type === 'licensePlate' ? 'vehicle' : type,
        confidence: event.score,
        clockBestWall: event.start + 500,
        croppedId: objectId(),
        objectId: `${index + 1}`,
        coord: [100, 80, 240, 200],
        ...(options.licensePlate && (type === 'vehicle' || type === 'licensePlate')
          ? { name: options.licensePlate }
          : {}),
      }));
    const metadata: Record<string, unknown> = {
      detectedThumbnails: thumbnails,
      ...(options.licensePlate
        ? { licensePlate: { name: options.licensePlate, confidenceLevel: event.score } }
        : {}),
      ...options.metadata,
    };
    const cameraPatch = { isSmartDetected: false };
    this.patchCamera(event.cameraId, cameraPatch);
    const payload = {
      end: event.end,
      score: event.score,
      smartDetectTypes: event.smartDetectTypes,
      metadata,
    };
    return this.emission(event.id, event.cameraId, [
      this.packet('update', 'event', event.id, payload, event.cameraId),
      this.packet('update', 'camera', event.cameraId, cameraPatch),
    ]);
  }

  /**
   * The doorbell rings: `add`/`event` with `type: 'ring'` (no `end`), then `update`/`camera` with
   * `lastRing`. Only for doorbell models (`featureFlags.isDoorbell`).
   */
  ring(cameraId: string): FakeProtectEmission {
    const camera = this.requireCamera(cameraId);
    if (!camera.featureFlags.isDoorbell)
      throw new Error(`camera ${camera.name} (${camera.type}) is not a doorbell`);
    const event = this.createEvent(cameraId, 'ring', 0, []);
    const cameraPatch = { lastRing: event.start };
    this.patchCamera(cameraId, cameraPatch);
    return this.emission(event.id, cameraId, [
      this.packet('add', 'event', event.id, this.eventPayload(event)),
      this.packet('update', 'camera', cameraId, cameraPatch),
    ]);
  }

  /** Ends any open event with an `update`/`event` packet carrying `end` (and `extra`), nothing else. */
  endEvent(eventId: string, extra: Record<string, unknown> = {}): FakeProtectEmission {
    const event = this.requireOpenEvent(eventId);
    event.end = Date.now();
    return this.emission(event.id, event.cameraId, [
      this.packet('update', 'event', event.id, { end: event.end, ...extra }, event.cameraId),
    ]);
  }

  /**
   * Sends one packet with any header and payload (`newUpdateId` is added when missing), for shapes the helpers
   * do not make. `format` defaults from the payload's type; `deflate` from the console's setting.
   */
  sendPacket(
    header: Record<string, unknown>,
    payload: unknown,
    options: { deflate?: boolean; format?: FakeProtectPayloadFormat } = {},
  ): FakeProtectEmission {
    const fullHeader = { newUpdateId: randomUUID(), ...header };
    this.lastUpdateId = String(fullHeader.newUpdateId);
    const bytes = encodeProtectPacket(fullHeader, payload, {
      ...options,
      deflate: options.deflate ?? this.deflate,
    });
    const cameraId = typeof header.id === 'string' ? header.id : '';
    return this.emission(null, cameraId, [{ id: this.lastUpdateId, bytes }]);
  }

  /** Writes these bytes as one binary WebSocket message, e.g. a truncated or corrupt packet. */
  sendRawMessage(bytes: Buffer): number {
    return this.broadcast([bytes]);
  }

  // ---- failure modes -----------------------------------------------------------------------------------

  /** Deflate (default) or not the frames of the packets sent from now on. */
  setDeflate(deflate: boolean): void {
    this.deflate = deflate;
  }

  /**
   * Kills every updates WebSocket without a close frame (TCP destroyed), like a network drop or a console
   * reboot. With `includeHttp`, open HTTP connections are destroyed too.
   */
  dropConnections(options: { includeHttp?: boolean } = {}): void {
    for (const client of this.clients) client.ws.terminate();
    this.clients.clear();
    if (options.includeHttp) for (const socket of this.sockets) socket.destroy();
  }

  /** Closes every updates WebSocket cleanly with this close code (1001 "going away" by default). */
  closeConnections(code = 1001, reason = 'going away'): void {
    for (const client of this.clients) client.ws.close(code, reason);
  }

  /**
   * While silent, WebSockets stay open but the console sends nothing: no packets (emits report
   * `delivered: 0`), no heartbeats, no pings, and pings from clients get no pong. HTTP keeps working.
   */
  goSilent(silent: boolean): void {
    this.silent = silent;
  }

  /** Credentials accepted by logins from now on (existing sessions stay valid). */
  setCredentials(username: string, password: string): void {
    this.username = username;
    this.password = password;
  }

  /**
   * Every login gets this status (401 with UniFi OS's invalid-credentials body, 429 too many attempts, 500...)
   * even with the right credentials; null accepts logins again.
   */
  rejectLogins(status: number | null = 401): void {
    this.loginRefusal = status;
  }

  /** Updates WebSocket upgrades get this HTTP status instead of 101; null accepts them again. */
  refuseWebsockets(status: number | null = 503): void {
    this.wsRefusal = status;
  }

  /** Forgets every session: requests with an old `TOKEN` cookie get 401 (as after a token expiry). */
  expireSessions(): void {
    this.sessions.clear();
  }

  /** Switches what the server pretends to be, see `FakeProtectConsoleMode`. */
  setMode(mode: FakeProtectConsoleMode): void {
    this.mode = mode;
  }

  /**
   * While on, HTTP requests are read and never answered (the client must time out); turning it off destroys
   * the requests that hang.
   */
  hangRequests(hang: boolean): void {
    this.hanging = hang;
    if (hang) return;
    for (const res of this.hung) {
      // HTTP/2 requests are streams of a session; HTTP/1.1 ones (ServerResponse) are destroyed themselves.
      const target = res as unknown as { stream?: { destroy(): void }; destroy?: () => void };
      if (target.stream) target.stream.destroy();
      else target.destroy?.();
    }
    this.hung.clear();
  }

  /** Snapshots of this camera get this status (e.g. 500 while it is offline); null serves them again. */
  failSnapshots(cameraId: string, status: number | null = 500): void {
    if (status === null) this.snapshotFailures.delete(cameraId);
    else this.snapshotFailures.set(cameraId, status);
  }

  /** Closes everything: WebSockets, connections, the server. Safe to call twice. */
  stop(): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      untrackFake(this.tracked);
      for (const timer of this.timers) clearInterval(timer);
      for (const client of this.clients) client.ws.terminate();
      this.clients.clear();
      this.wss.close();
      this.hangRequests(false);
      for (const socket of this.sockets) socket.destroy();
      if (!this.server) return resolve();
      this.server.close(() => resolve());
    });
    return this.stopping;
  }

  // ---- server ------------------------------------------------------------------------------------------

  private async listen(): Promise<void> {
    const server = createSecureServer({ key: this.keyPem, cert: this.certificatePem, allowHTTP1: true });
    this.server = server;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) reply(res, 500, { error: `fake failed: ${String(err)}` });
      });
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(req, socket, head),
    );
    // TLS handshakes that fail (a verifying client refusing the self-signed certificate) are not errors here.
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (!address || typeof address === 'string')
      throw new Error('fake Protect console is not listening on TCP');
    this.boundPort = address.port;
    if (this.options.heartbeatMs && this.options.heartbeatMs > 0) {
      this.timers.push(setInterval(() => this.heartbeat(), this.options.heartbeatMs).unref());
    }
    if (this.options.pingIntervalMs && this.options.pingIntervalMs > 0) {
      this.timers.push(
        setInterval(() => {
          if (this.silent) return;
          for (const client of this.clients) if (client.ws.readyState === client.ws.OPEN) client.ws.ping();
        }, this.options.pingIntervalMs).unref(),
      );
    }
  }

  private async handle(req: Http2ServerRequest, res: Http2ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const body = parseJson(raw);
    const method = req.method ?? 'GET';
    const path = url.pathname;
    this.requests.push({
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      at: Date.now(),
    });
    if (this.hanging) {
      this.hung.add(res);
      res.once('close', () => this.hung.delete(res));
      return;
    }
    if (this.mode === 'plain-https') {
      if (method === 'GET' && path === '/') return replyHtml(res, 200, PLAIN_INDEX_HTML);
      return replyHtml(res, 404, NOT_FOUND_HTML);
    }
    if (path === '/' && method === 'GET') {
      // UniFi OS serves its web app with a fresh CSRF token in a header; the library reads it from here.
      const csrf = randomUUID();
      this.issuedCsrfTokens.add(csrf);
      return replyHtml(res, 200, UNIFI_OS_INDEX_HTML, { 'x-csrf-token': csrf });
    }
    if (path === '/api/auth/login' && method === 'POST') return this.login(req, res, body);
    if (path === '/api/auth/logout' && method === 'POST') {
      const session = this.session(req.headers);
      if (session) this.sessions.delete(session.token);
      return reply(
        res,
        200,
        {},
        { 'set-cookie': 'TOKEN=; path=/; samesite=none; secure; httponly; max-age=0' },
      );
    }
    if (path === '/api/users/self' && method === 'GET') {
      if (!this.session(req.headers)) return reply(res, 401, { error: 'Unauthorized' });
      return reply(res, 200, this.user);
    }
    if (path.startsWith('/proxy/protect/')) return this.protect(req, res, method, path, body);
    if (path.startsWith('/api/') || path.startsWith('/proxy/'))
      return reply(res, 404, { error: 'Not Found' });
    // Any other page is the UniFi OS single-page app.
    return replyHtml(res, 200, UNIFI_OS_INDEX_HTML);
  }

  private login(req: Http2ServerRequest, res: Http2ServerResponse, body: unknown): void {
    this.counters.loginAttempts++;
    const csrfHeader = headerValue(req.headers, 'x-csrf-token');
    if (this.options.requireCsrfForLogin && (!csrfHeader || !this.issuedCsrfTokens.has(csrfHeader))) {
      return reply(res, 403, { code: 'CSRF_TOKEN_INVALID', message: 'Invalid CSRF token' });
    }
    if (this.loginRefusal !== null) return reply(res, this.loginRefusal, loginErrorBody(this.loginRefusal));
    const credentials = (body ?? {}) as { username?: unknown; password?: unknown };
    if (credentials.username !== this.username || credentials.password !== this.password) {
      return reply(res, 401, loginErrorBody(401));
    }
    const csrfToken = randomUUID();
    const token = this.jwt({ userId: this.user.id, csrfToken });
    this.sessions.set(token, { token, csrfToken, userId: this.user.id as string });
    this.counters.logins++;
    reply(
      res,
      200,
      {
        unique_id: this.user.id,
        username: this.username,
        first_name: this.username,
        last_name: '',
        full_name: this.username,
        email: this.user.email,
        email_status: 'UNVERIFIED',
        local_account_exist: true,
        isOwner: false,
        isSuperAdmin: this.user.role === 'admin',
        deviceToken: randomBytes(32).toString('hex'),
      },
      {
        'set-cookie': `TOKEN=${token}; path=/; samesite=none; secure; httponly`,
        'x-csrf-token': csrfToken,
      },
    );
  }

  private protect(
    req: Http2ServerRequest,
    res: Http2ServerResponse,
    method: string,
    path: string,
    body: unknown,
  ): void {
    if (this.mode === 'unifi-os-without-protect') return replyHtml(res, 404, NOT_FOUND_HTML);
    const session = this.session(req.headers);
    if (!session) return reply(res, 401, { error: 'Unauthorized' });
    if (
      method !== 'GET' &&
      method !== 'HEAD' &&
      headerValue(req.headers, 'x-csrf-token') !== session.csrfToken
    ) {
      return reply(res, 403, { error: 'Invalid CSRF token' });
    }
    const api = path.slice('/proxy/protect/api'.length);
    if (method === 'GET' && api === '/bootstrap') {
      this.counters.bootstrapRequests++;
      return reply(res, 200, this.buildBootstrap());
    }
    if (method === 'GET' && api === '/nvr') return reply(res, 200, this.nvr);
    if (method === 'GET' && api === '/cameras') return reply(res, 200, [...this.cameras.values()]);
    const match = /^\/cameras\/([^/]+)(?:\/(snapshot|package-snapshot))?$/.exec(api);
    if (!match) return reply(res, 404, { error: `Not Found: ${method} ${path}` });
    const [, id, snapshot] = match;
    if (snapshot) this.snapshotCounts.set(id, this.snapshotRequests(id) + 1);
    const camera = this.cameras.get(id);
    if (!camera) return reply(res, 404, { error: 'Camera not found' });
    if (snapshot && method === 'GET') {
      const failure = this.snapshotFailures.get(id);
      if (failure !== undefined) return reply(res, failure, { error: 'Unable to get snapshot' });
      if (snapshot === 'package-snapshot' && !camera.featureFlags.hasPackageCamera) {
        return reply(res, 404, { error: 'Camera has no package camera' });
      }
      res.writeHead(200, {
        'content-type': 'image/jpeg',
        'content-length': String(this.snapshotJpeg.length),
      });
      res.end(this.snapshotJpeg);
      return;
    }
    if (!snapshot && method === 'GET') return reply(res, 200, camera);
    if (!snapshot && method === 'PATCH') {
      if (this.user.role !== 'admin') return reply(res, 403, { error: 'Forbidden' });
      const patch = (body ?? {}) as Record<string, unknown>;
      this.patchCamera(id, patch);
      this.send([this.packet('update', 'camera', id, patch)]);
      return reply(res, 200, this.cameras.get(id));
    }
    return reply(res, 405, { error: 'Method Not Allowed' });
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    if (this.mode !== 'protect' || url.pathname !== UPDATES_PATH) return refuseUpgrade(socket, 404);
    if (!this.session(req.headers)) return refuseUpgrade(socket, 401);
    if (this.wsRefusal !== null) return refuseUpgrade(socket, this.wsRefusal);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      if (this.stopping) return ws.terminate();
      const client: WsClient = {
        ws,
        lastUpdateId: url.searchParams.get('lastUpdateId') ?? '',
        connectedAt: Date.now(),
      };
      this.clients.add(client);
      this.wsLastUpdateIds.push(client.lastUpdateId);
      this.counters.wsConnections++;
      ws.on('ping', (data: Buffer) => {
        if (!this.silent) ws.pong(data);
      });
      ws.on('pong', () => this.counters.pongs++);
      ws.on('close', () => this.clients.delete(client));
      ws.on('error', () => this.clients.delete(client));
    });
  }

  // ---- state and packets -------------------------------------------------------------------------------

  private buildBootstrap(): Record<string, unknown> {
    return {
      authUserId: this.user.id,
      accessKey: `${Date.now()}:${randomBytes(12).toString('hex')}:${randomBytes(32).toString('hex')}`,
      cameras: [...this.cameras.values()],
      users: [this.user],
      groups: [
        {
          id: objectId(),
          modelKey: 'group',
          name: 'Administrators',
          type: 'preset',
          permissions: ADMIN_PERMISSIONS,
        },
      ],
      liveviews: [
        {
          id: objectId(),
          modelKey: 'liveview',
          name: 'All Cameras',
          isDefault: true,
          isGlobal: true,
          layout: 4,
          owner: this.user.id,
          slots: [{ cameras: [...this.cameras.keys()], cycleMode: 'time', cycleInterval: 10 }],
        },
      ],
      viewers: [],
      lights: [],
      bridges: [],
      sensors: [],
      doorlocks: [],
      chimes: [],
      ringtones: [],
      nvr: {
        ...this.nvr,
        lastSeen: Date.now(),
        uptime: Math.round((Date.now() - this.startedAt) / 1000) + 86_400,
      },
      lastUpdateId: this.lastUpdateId,
      cloudPortalUrl: '',
    };
  }

  private insertCamera(init: FakeProtectCameraInit, index: number): FakeProtectCameraJson {
    const model = init.model ?? 'G4 Bullet';
    const info = MODELS[model];
    const id = init.id ?? objectId();
    if (this.cameras.has(id)) throw new Error(`fake Protect console already has a camera ${id}`);
    const connected = init.isConnected ?? true;
    const now = Date.now();
    const smartDetectTypes = init.smartDetectTypes ?? info.smartDetectTypes;
    const host = init.host ?? `192.168.1.${100 + index}`;
    const camera: FakeProtectCameraJson = {
      id,
      modelKey: 'camera',
      name: init.name,
      displayName: init.name,
      type: info.type,
      marketName: model,
      mac: init.mac ?? randomMac(),
      host,
      connectionHost: '127.0.0.1',
      guid: randomUUID(),
      nvrMac: this.nvr.mac,
      firmwareVersion: '4.69.55',
      firmwareBuild: 'a8d5f2e.240711.1201',
      hardwareRevision: '11',
      platform: 'sav530q',
      isConnected: connected,
      state: connected ? 'CONNECTED' : 'DISCONNECTED',
      isAdopted: true,
      isAdoptedByOther: false,
      isAdopting: false,
      isAttemptingToConnect: false,
      isManaged: true,
      isProvisioned: false,
      isRebooting: false,
      isUpdating: false,
      isDeleting: false,
      isHidden: false,
      isThirdPartyCamera: false,
      isRecording: connected,
      isMotionDetected: false,
      isSmartDetected: false,
      isDark: false,
      isMicEnabled: true,
      hasSpeaker: info.doorbell,
      hasWifi: info.doorbell,
      lastMotion: null,
      lastSeen: now,
      lastDisconnect: connected ? null : now,
      connectedSince: connected ? now - 3_600_000 : null,
      upSince: now - 3_600_000,
      uptime: 3600,
      canManage: true,
      micVolume: 100,
      videoCodec: 'h264',
      videoMode: 'default',
      hdrMode: false,
      is2K: false,
      is4K: false,
      currentResolution: '1080p',
      channels: [
        channel(0, 'High', 1920, 1080, 6_000_000),
        channel(1, 'Medium', 1280, 720, 2_000_000),
        channel(2, 'Low', 640, 360, 300_000),
      ],
      recordingSettings: {
        mode: 'detections',
        prePaddingSecs: 2,
        postPaddingSecs: 2,
        minMotionEventTrigger: 1000,
      },
      smartDetectSettings: { objectTypes: smartDetectTypes, audioTypes: [], autoTrackingObjectTypes: [] },
      smartDetectZones: [],
      featureFlags: {
        smartDetectTypes,
        smartDetectAudioTypes: [],
        hasSmartDetect: smartDetectTypes.length > 0,
        isDoorbell: info.doorbell,
        hasChime: info.doorbell,
        hasPackageCamera: info.packageCamera,
        hasLcdScreen: info.doorbell,
        hasSpeaker: info.doorbell,
        hasMic: true,
        hasHdr: !info.doorbell,
        hasLedStatus: true,
        hasMotionZones: true,
        hasInfrared: true,
        isPtz: false,
        audioCodecs: ['aac', 'opus'],
        videoCodecs: ['h264'],
        videoModes: ['default'],
      },
      stats: { rxBytes: 0, txBytes: 0, video: {}, storage: { used: 0, rate: 0 } },
      ...(info.doorbell
        ? {
            lastRing: null,
            lcdMessage: {},
            chimeDuration: 300,
            talkbackSettings: { typeFmt: 'aac', typeIn: 'serverudp' },
          }
        : {}),
    };
    const merged = init.extra ? (deepMerge(camera, init.extra) as FakeProtectCameraJson) : camera;
    this.cameras.set(id, merged);
    return merged;
  }

  private patchCamera(id: string, patch: Record<string, unknown>): void {
    const camera = this.requireCamera(id);
    this.cameras.set(id, deepMerge(camera, patch) as FakeProtectCameraJson);
  }

  private requireCamera(id: string): FakeProtectCameraJson {
    const camera = this.cameras.get(id);
    if (!camera) throw new Error(`fake Protect console has no camera ${id}`);
    return camera;
  }

  private createEvent(cameraId: string, type: string, score: number, types: string[]): FakeProtectEventState {
    const event: FakeProtectEventState = {
      id: objectId(),
      type,
      cameraId,
      start: Date.now(),
      end: null,
      score,
      smartDetectTypes: types,
    };
    this.events.set(event.id, event);
    return event;
  }

  private requireOpenEvent(eventId: string, type?: string): FakeProtectEventState {
    const event = this.events.get(eventId);
    if (!event) throw new Error(`fake Protect console has no event ${eventId}`);
    if (type && event.type !== type)
      throw new Error(`event ${eventId} is a ${event.type} event, not ${type}`);
    if (event.end !== null) throw new Error(`event ${eventId} has already ended`);
    return event;
  }

  private eventPayload(event: FakeProtectEventState): Record<string, unknown> {
    // The shape of a console's `add` packet: no `end` yet (it comes in an `update`).
    return {
      id: event.id,
      modelKey: 'event',
      type: event.type,
      start: event.start,
      score: event.score,
      smartDetectTypes: event.smartDetectTypes,
      smartDetectEvents: [],
      metadata: {},
      [this.options.eventCameraKey ?? 'camera']: event.cameraId,
      partition: null,
      user: null,
    };
  }

  private heartbeat(): void {
    const now = Date.now();
    const patch = { lastSeen: now, uptime: Math.round((now - this.startedAt) / 1000) + 86_400 };
    this.send([this.packet('update', 'nvr', this.nvr.id as string, patch)]);
  }

  /** Encodes a packet and advances `lastUpdateId`; `recordId` is set on `update`s of events, as consoles do. */
  private packet(
    action: string,
    modelKey: string,
    id: string,
    payload: unknown,
    recordId?: string,
  ): { id: string; bytes: Buffer } {
    const newUpdateId = randomUUID();
    const header: Record<string, unknown> = { action, newUpdateId, modelKey, id };
    if (recordId) Object.assign(header, { recordModel: 'camera', recordId });
    this.lastUpdateId = newUpdateId;
    return { id: newUpdateId, bytes: encodeProtectPacket(header, payload, { deflate: this.deflate }) };
  }

  private emission(
    eventId: string | null,
    cameraId: string,
    packets: { id: string; bytes: Buffer }[],
  ): FakeProtectEmission {
    const event = eventId ? this.events.get(eventId) : undefined;
    const delivered = this.send(packets);
    return {
      eventId,
      cameraId,
      sentAt: Date.now(),
      ...(event ? { start: event.start } : {}),
      ...(event?.end ? { end: event.end } : {}),
      updateIds: packets.map((p) => p.id),
      delivered,
    };
  }

  private send(packets: { bytes: Buffer }[]): number {
    return packets.length === 0 ? 0 : this.broadcast(packets.map((p) => p.bytes));
  }

  private broadcast(messages: Buffer[]): number {
    if (this.silent) return 0;
    let delivered = 0;
    for (const client of this.clients) {
      if (client.ws.readyState !== client.ws.OPEN) continue;
      for (const message of messages) client.ws.send(message, { binary: true });
      delivered++;
    }
    return delivered;
  }

  private session(headers: IncomingHttpHeaders): Session | null {
    const token = cookieValue(headers.cookie, 'TOKEN');
    return token ? (this.sessions.get(token) ?? null) : null;
  }

  private jwt(claims: Record<string, unknown>): string {
    const now = Math.floor(Date.now() / 1000);
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({
      ...claims,
      passwordRevision: 0,
      isRemembered: true,
      iat: now,
      exp: now + 7200,
      jti: randomUUID(),
    })}`;
    return `${unsigned}.${createHmac('sha256', this.jwtSecret).update(unsigned).digest('base64url')}`;
  }
}

// ---- helpers -------------------------------------------------------------------------------------------

/** A self-signed P-256 certificate for 127.0.0.1 and localhost, valid two days, made with the openssl CLI. */
function makeSelfSignedCertificate(): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fake-protect-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-subj', '/CN=unvr.fake-protect.invalid', '-days', '2'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
        ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      ],
      { stdio: 'pipe' },
    );
    return {
      certPem: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'),
    };
  } catch (error) {
    throw new Error(`the fake Protect console needs the openssl command: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function channel(
  id: number,
  name: string,
  width: number,
  height: number,
  bitrate: number,
): Record<string, unknown> {
  return {
    id,
    name,
    enabled: true,
    isRtspEnabled: id === 0,
    rtspAlias: id === 0 ? randomBytes(8).toString('base64url').slice(0, 16) : null,
    width,
    height,
    fps: 30,
    bitrate,
    minBitrate: Math.round(bitrate / 4),
    maxBitrate: bitrate,
    idrInterval: 5,
    autoBitrate: false,
    autoFps: false,
    fpsValues: [1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16, 18, 20, 24, 25, 30],
    videoId: `video${id + 1}`,
  };
}

function loginErrorBody(status: number): Record<string, unknown> {
  if (status === 401) {
    return { code: 'AUTHENTICATION_FAILED_INVALID_CREDENTIALS', message: 'Invalid username or password' };
  }
  if (status === 429) {
    return {
      code: 'AUTHENTICATION_FAILED_LIMIT_REACHED',
      message: 'Too many failed attempts, try again later',
    };
  }
  return { code: 'AUTHENTICATION_FAILED', message: `Login failed (HTTP ${status})` };
}

function reply(
  res: Http2ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

function replyHtml(
  res: Http2ServerResponse,
  status: number,
  html: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(html)),
    ...headers,
  });
  res.end(html);
}

function refuseUpgrade(socket: Duplex, status: number): void {
  const reason = { 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  socket.once('finish', () => socket.destroy());
}

async function readBody(req: Http2ServerRequest): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return null;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return null;
  }
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

function deepMerge(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    const existing = result[key];
    result[key] = isPlainObject(existing) && isPlainObject(value) ? deepMerge(existing, value) : value;
  }
  return result;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function objectId(): string {
  return randomBytes(12).toString('hex');
}

function randomMac(): string {
  return randomBytes(6).toString('hex').toUpperCase();
}
