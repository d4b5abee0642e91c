import {
  chooseDetectionType,
  licensePlateOf,
  protectObjects,
  readPacket,
  smartTypes,
} from './protect-packets';

const CAMERA = '65a1b2c3d4e5f60718293a4b';
const EVENT = '65a1b2c3d4e5f60718293a99';
const START = 1_795_400_000_000;

describe('readPacket', () => {
  it('reads a motion start (score 0 = none yet)', () => {
    expect(
      readPacket({
        header: { action: 'add', modelKey: 'event', id: EVENT },
        payload: { id: EVENT, type: 'motion', start: START, score: 0, camera: CAMERA, smartDetectTypes: [] },
      }),
    ).toEqual({
      kind: 'detection-start',
      protectEventId: EVENT,
      protectCameraId: CAMERA,
      types: ['motion'],
      score: null,
      start: new Date(START),
      ended: false,
    });
  });

  it('reads a smart detection with the Vigil names, in console order, and cameraId instead of camera', () => {
    const update = readPacket({
      header: { action: 'add', modelKey: 'event', id: EVENT },
      payload: {
        type: 'smartDetectZone',
        start: START,
        score: 87,
        cameraId: CAMERA,
        smartDetectTypes: ['licensePlate', 'vehicle', 'smokeAlarm', 'vehicle'],
      },
    });
    expect(update).toMatchObject({ types: ['license_plate', 'vehicle'], score: 87, protectCameraId: CAMERA });
  });

  it('reads a ring (with or without an end)', () => {
    const ring = readPacket({
      header: { action: 'add', modelKey: 'event', id: EVENT },
      payload: { type: 'ring', start: START, end: START + 1, camera: CAMERA },
    });
    expect(ring).toMatchObject({ kind: 'detection-start', types: ['ring'], ended: true });
  });

  it('reads an end with the final score and a late license plate', () => {
    expect(
      readPacket({
        header: {
          action: 'update',
          modelKey: 'event',
          id: EVENT,
          recordModel: 'camera',
          recordId: CAMERA,
        } as never,
        payload: {
          end: START + 5000,
          score: 140,
          smartDetectTypes: ['vehicle'],
          metadata: { detectedThumbnails: [{ type: 'vehicle', name: 'XYZ 987' }] },
        },
      }),
    ).toEqual({
      kind: 'detection-update',
      protectEventId: EVENT,
      protectCameraId: CAMERA,
      types: ['vehicle'],
      score: 100,
      end: new Date(START + 5000),
      licensePlate: 'XYZ 987',
    });
  });

  it('reads camera connection changes', () => {
    expect(
      readPacket({
        header: { action: 'update', modelKey: 'camera', id: CAMERA },
        payload: { isConnected: false },
      }),
    ).toEqual({ kind: 'camera-connection', protectCameraId: CAMERA, online: false });
  });

  it.each([
    [
      'camera statistics',
      { header: { action: 'update', modelKey: 'camera', id: CAMERA }, payload: { stats: {} } },
    ],
    ['an nvr update', { header: { action: 'update', modelKey: 'nvr', id: 'n' }, payload: { uptime: 5 } }],
    [
      'a smart audio event',
      {
        header: { action: 'add', modelKey: 'event', id: EVENT },
        payload: { type: 'smartAudioDetect', start: START, camera: CAMERA },
      },
    ],
    [
      'a smart detection of unknown kinds',
      {
        header: { action: 'add', modelKey: 'event', id: EVENT },
        payload: { type: 'smartDetectZone', start: START, camera: CAMERA, smartDetectTypes: ['alrmSmoke'] },
      },
    ],
    [
      'an event without camera',
      { header: { action: 'add', modelKey: 'event', id: EVENT }, payload: { type: 'motion', start: START } },
    ],
    [
      'an event without start',
      {
        header: { action: 'add', modelKey: 'event', id: EVENT },
        payload: { type: 'motion', camera: CAMERA },
      },
    ],
    ['a string payload', { header: { action: 'add', modelKey: 'event', id: EVENT }, payload: 'motion' }],
    [
      'a packet without header id',
      {
        header: { action: 'add', modelKey: 'event' },
        payload: { type: 'motion', start: START, camera: CAMERA },
      },
    ],
    ['a null header', { header: null as never, payload: {} }],
  ])('ignores %s', (_name, packet) => {
    expect(readPacket(packet)).toBeNull();
  });
});

describe('the event a detection becomes', () => {
  it('takes the first type the camera makes events of', () => {
    expect(chooseDetectionType(['vehicle', 'license_plate'], ['license_plate', 'person'])).toBe(
      'license_plate',
    );
    expect(chooseDetectionType(['person', 'vehicle'], ['vehicle', 'person'])).toBe('person');
    expect(chooseDetectionType(['animal'], ['person'])).toBeNull();
    expect(chooseDetectionType(['motion'], [])).toBeNull();
  });

  it('lists the smart types and the plate as objects', () => {
    expect(protectObjects(['vehicle', 'license_plate'], 'ABC123')).toEqual([
      'vehicle',
      'license_plate',
      'plate:ABC123',
    ]);
    expect(protectObjects(['motion'], null)).toEqual([]);
    expect(protectObjects(['ring'], null)).toEqual([]);
  });

  it('finds a plate in the metadata or a vehicle thumbnail', () => {
    expect(licensePlateOf({ metadata: { licensePlate: { name: 'AB 12' } } })).toBe('AB 12');
    expect(
      licensePlateOf({
        metadata: { detectedThumbnails: [{ type: 'person' }, { type: 'vehicle', name: 'Q1' }] },
      }),
    ).toBe('Q1');
    expect(licensePlateOf({ metadata: {} })).toBeNull();
    expect(licensePlateOf({})).toBeNull();
  });

  it('maps the console names', () => {
    expect(smartTypes(['person', 'vehicle', 'animal', 'package', 'face', 'licensePlate'])).toEqual([
      'person',
      'vehicle',
      'animal',
      'package',
      'face',
      'license_plate',
    ]);
    expect(smartTypes('person')).toEqual([]);
  });
});
