import {
  allowedEventTypes,
  cameraIdOf,
  CLIENT_EVENT_TYPES,
  effectiveSubscription,
  isClientEventType,
  matches,
  MAX_SUBSCRIBED_CAMERAS,
  parseClientMessage,
  subscriptionAck,
} from './realtime-protocol';

const CAM_A = '0b4f1a9e-6c3d-4d7e-9a51-2f0c8e6b1d23';
const CAM_B = '5f7c2d10-8e4b-4c1a-b3d2-9a6e0f1c2b3d';

describe('realtime protocol', () => {
  it('maps scopes to the kinds a client may receive', () => {
    expect(allowedEventTypes(['admin'])).toEqual(CLIENT_EVENT_TYPES);
    expect(allowedEventTypes(['read:events'])).toEqual([
      'event.created',
      'event.updated',
      'event.deleted',
      'notification.new',
    ]);
    expect(allowedEventTypes(['read:cameras'])).toEqual(['camera.status', 'camera.updated']);
    expect(allowedEventTypes(['write:cameras'])).toEqual([]);
    expect(isClientEventType('settings.changed')).toBe(false);
    expect(isClientEventType('auth.revoked')).toBe(false);
    expect(isClientEventType('toString')).toBe(false);
  });

  it('finds the camera of each kind', () => {
    expect(cameraIdOf({ type: 'event.created', data: { id: 'e', camera_id: CAM_A.toUpperCase() } })).toBe(
      CAM_A,
    );
    expect(cameraIdOf({ type: 'camera.updated', data: { id: CAM_B } })).toBe(CAM_B);
    expect(
      cameraIdOf({
        type: 'camera.status',
        data: {
          camera_id: CAM_A,
          camera_name: 'x',
          status: 'running',
          previous_status: null,
          status_message: null,
        },
      }),
    ).toBe(CAM_A);
    expect(cameraIdOf({ type: 'notification.new', data: { id: 'n' } })).toBeUndefined();
  });

  it('reads ping and subscribe messages', () => {
    expect(parseClientMessage('ping')).toEqual({ kind: 'ping' });
    expect(parseClientMessage(' ping\n')).toEqual({ kind: 'ping' });
    expect(parseClientMessage('{"action":"subscribe"}')).toEqual({
      kind: 'subscribe',
      request: { types: null, cameraIds: null },
    });
    expect(
      parseClientMessage(
        JSON.stringify({
          action: 'subscribe',
          types: ['camera.status', 'camera.status'],
          camera_ids: [CAM_A.toUpperCase()],
        }),
      ),
    ).toEqual({ kind: 'subscribe', request: { types: ['camera.status'], cameraIds: [CAM_A] } });
    expect(parseClientMessage('{"action":"subscribe","types":[],"camera_ids":[]}')).toEqual({
      kind: 'subscribe',
      request: { types: null, cameraIds: null },
    });
  });

  it.each([
    ['PING', /JSON objects/],
    ['null', /JSON objects/],
    ['"subscribe"', /JSON objects/],
    ['{}', /Missing "action"/],
    ['{"action":"unsubscribe"}', /Unknown action "unsubscribe"/],
    ['{"action":"subscribe","types":"event.created"}', /"types" must be an array of strings/],
    ['{"action":"subscribe","types":[1]}', /"types" must be an array of strings/],
    ['{"action":"subscribe","types":["settings.changed"]}', /Unknown type\(s\): "settings.changed"/],
    ['{"action":"subscribe","camera_ids":"x"}', /"camera_ids" must be an array/],
    ['{"action":"subscribe","camera_ids":["not-a-uuid"]}', /must be UUIDs; not a UUID: "not-a-uuid"/],
    ['{"action":"subscribe","extra":1}', /Unknown field\(s\): extra/],
  ])('rejects %s', (text, detail) => {
    const message = parseClientMessage(text);
    expect(message.kind).toBe('invalid');
    expect(message.kind === 'invalid' && message.detail).toMatch(detail);
  });

  it('limits the number of cameras', () => {
    const ids = Array.from(
      { length: MAX_SUBSCRIBED_CAMERAS + 1 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    );
    expect(parseClientMessage(JSON.stringify({ action: 'subscribe', camera_ids: ids })).kind).toBe('invalid');
    expect(parseClientMessage(JSON.stringify({ action: 'subscribe', camera_ids: ids.slice(1) })).kind).toBe(
      'subscribe',
    );
  });

  it('intersects the requested kinds with the allowed ones and filters by camera', () => {
    const allowed = allowedEventTypes(['read:cameras']);
    const sub = effectiveSubscription(
      { types: ['event.created', 'camera.status'], cameraIds: [CAM_A] },
      allowed,
    );
    expect(subscriptionAck(sub)).toEqual({
      types: ['camera.status'],
      camera_ids: [CAM_A],
      ignored_types: ['event.created'],
    });
    expect(matches(sub, 'camera.status', CAM_A)).toBe(true);
    expect(matches(sub, 'camera.status', CAM_B)).toBe(false);
    expect(matches(sub, 'camera.status', undefined)).toBe(true);
    expect(matches(sub, 'camera.updated', CAM_A)).toBe(false);
    expect(matches(sub, 'event.created', CAM_A)).toBe(false);

    const all = effectiveSubscription({ types: null, cameraIds: null }, allowed);
    expect(subscriptionAck(all)).toEqual({ types: allowed, camera_ids: [], ignored_types: [] });
    expect(matches(all, 'camera.updated', CAM_B)).toBe(true);
    expect(matches(all, 'event.created', CAM_B)).toBe(false);
  });
});
