import WebSocket from 'ws';
import { DomainEventBus } from '../src/modules/realtime/domain-event-bus';
import type { DomainMessage } from '../src/modules/realtime/domain-events';
import { FakeMjpegCamera } from './fakes/mjpeg-camera';
import { FakeRtspCamera, stopAllFakeCameras } from './fakes/rtsp-camera';
import { describeWithMedia } from './support/media';
import { childProcessIds, sleep, waitFor } from './support/processes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Live capture against real cameras on 127.0.0.1: a GStreamer RTSP server and an MJPEG-over-HTTP server whose
 * pictures move ("motion": a moving ball / testsrc2) or do not ("still"). Covers motion events, zones, cooldown,
 * snapshots, the status machine through a camera outage, restarts on changed settings, resume after a service
 * restart, and that no ffmpeg process outlives a camera.
 */

type Camera = Record<string, unknown> & { id: string; name: string; status: string };
type Event = Record<string, unknown> & { id: string; camera_id: string };

/** Small pictures keep the fakes' encoders cheap on a 2-core machine; capture scales to 320x180 anyway. */
const CAMERA_SIZE = { width: 320, height: 180, fps: 10 };

describeWithMedia('live capture (e2e)', () => {
  let t: TestApp;
  let admin: string;
  let seq = 0;
  const messages: DomainMessage[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    t = await startTestApp();
    admin = `Bearer ${await t.adminToken()}`;
    unsubscribe = t.app.get(DomainEventBus).subscribe((m) => messages.push(m));
  });

  afterAll(async () => {
    unsubscribe?.();
    try {
      await t?.close();
    } finally {
      await stopAllFakeCameras();
    }
  });

  async function createCamera(body: Record<string, unknown>): Promise<Camera> {
    const res = await t.http
      .post('/api/v1/cameras')
      .set('Authorization', admin)
      .send({ name: `Capture ${++seq}`, source_type: 'rtsp', frame_rate: 5, ...body })
      .expect(201);
    return res.body as Camera;
  }

  async function getCamera(id: string): Promise<Camera> {
    return (await t.http.get(`/api/v1/cameras/${id}`).set('Authorization', admin).expect(200)).body as Camera;
  }

  async function motionEvents(cameraId: string): Promise<Event[]> {
    const res = await t.http
      .get(`/api/v1/events?camera_id=${cameraId}&detection_type=motion&limit=100`)
      .set('Authorization', admin)
      .expect(200);
    return res.body.items as Event[];
  }

  function waitForStatus(id: string, status: string, timeoutMs = 20_000): Promise<Camera> {
    return waitFor(
      `camera ${id} to be ${status}`,
      async () => {
        const camera = await getCamera(id);
        return camera.status === status ? camera : undefined;
      },
      timeoutMs,
    );
  }

  function statusChanges(id: string): string[] {
    return messages
      .filter((m) => m.type === 'camera.status' && (m.data as { camera_id: string }).camera_id === id)
      .map((m) => (m.data as { status: string }).status);
  }

  it('a moving picture makes a motion event with the picture, a still one none', async () => {
    const moving = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'motion' });
    const still = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const movingCamera = await createCamera({ url: moving.url(), enabled: true });
    const stillCamera = await createCamera({ url: still.url(), enabled: true });
    expect(movingCamera.status).toBe('starting');

    const running = await waitForStatus(movingCamera.id, 'running');
    expect(running.status_message).toBeNull();
    await waitForStatus(stillCamera.id, 'running');

    const [event] = await waitFor('a motion event', async () => {
      const events = await motionEvents(movingCamera.id);
      return events.length > 0 ? events : undefined;
    });
    expect(event).toMatchObject({
      camera_id: movingCamera.id,
      camera_name: movingCamera.name,
      detection_type: 'motion',
      source_type: 'rtsp',
      thumbnail_url: `/api/v1/events/${event.id}/thumbnail`,
    });
    expect(event.confidence).toBeGreaterThanOrEqual(1);
    expect(event.confidence).toBeLessThanOrEqual(100);
    const image = await t.http
      .get(event.thumbnail_url as string)
      .set('Authorization', admin)
      .expect(200);
    expect(image.headers['content-type']).toBe('image/jpeg');
    expect((image.body as Buffer).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(
      messages.some((m) => m.type === 'event.created' && (m.data as { id: string }).id === event.id),
    ).toBe(true);
    expect((await getCamera(movingCamera.id)).last_event_at).not.toBeNull();

    // The still camera ran all along without making an event.
    await sleep(2_000);
    expect(await motionEvents(stillCamera.id)).toHaveLength(0);
    const stats = await t.http.get('/api/v1/system/capture').set('Authorization', admin).expect(200);
    const stillStats = (stats.body.cameras as Record<string, unknown>[]).find(
      (c) => c.camera_id === stillCamera.id,
    );
    expect(stillStats).toMatchObject({ status: 'running', motion_events: 0 });
    expect(stillStats?.frames_analysed as number).toBeGreaterThan(10);

    await t.http.delete(`/api/v1/cameras/${movingCamera.id}`).set('Authorization', admin).expect(204);
    await t.http.delete(`/api/v1/cameras/${stillCamera.id}`).set('Authorization', admin).expect(204);
    expect(childProcessIds('ffmpeg')).toEqual([]);
  });

  it('serves the current picture as a snapshot while running, 409 when stopped', async () => {
    const cam = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const camera = await createCamera({ url: cam.url(), enabled: true });
    await waitForStatus(camera.id, 'running');
    const snapshot = await waitFor('a snapshot', async () => {
      const res = await t.http.get(`/api/v1/cameras/${camera.id}/snapshot`).set('Authorization', admin);
      return res.status === 200 ? res : undefined;
    });
    expect(snapshot.headers['content-type']).toBe('image/jpeg');
    expect(snapshot.headers['cache-control']).toBe('no-store');
    const jpeg = snapshot.body as Buffer;
    expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(jpeg.subarray(-2)).toEqual(Buffer.from([0xff, 0xd9]));

    const stopped = await t.http
      .post(`/api/v1/cameras/${camera.id}/stop`)
      .set('Authorization', admin)
      .expect(200);
    expect(stopped.body).toMatchObject({ enabled: false, status: 'stopped', status_message: null });
    expect(childProcessIds('ffmpeg')).toEqual([]);
    const conflict = await t.http
      .get(`/api/v1/cameras/${camera.id}/snapshot`)
      .set('Authorization', admin)
      .expect(409);
    expect(conflict.body).toEqual({
      detail: 'The camera is not running (status: stopped)',
      status_code: 409,
    });
    // Stop is idempotent.
    await t.http.post(`/api/v1/cameras/${camera.id}/stop`).set('Authorization', admin).expect(200);

    const started = await t.http
      .post(`/api/v1/cameras/${camera.id}/start`)
      .set('Authorization', admin)
      .expect(200);
    expect(started.body).toMatchObject({ enabled: true, status: 'starting' });
    await waitForStatus(camera.id, 'running');
    // Start is idempotent: a second start keeps the one capture process.
    const pids = childProcessIds('ffmpeg');
    expect(pids).toHaveLength(1);
    const again = await t.http
      .post(`/api/v1/cameras/${camera.id}/start`)
      .set('Authorization', admin)
      .expect(200);
    expect(again.body.status).toBe('running');
    expect(childProcessIds('ffmpeg')).toEqual(pids);
    expect(statusChanges(camera.id)).toEqual(['starting', 'running', 'stopped', 'starting', 'running']);

    await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
    expect(childProcessIds('ffmpeg')).toEqual([]);
  });

  it('goes reconnecting when the camera dies and running again when it returns', async () => {
    const cam = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const camera = await createCamera({ url: cam.url(), enabled: true });
    await waitForStatus(camera.id, 'running');

    await cam.stop();
    const reconnecting = await waitForStatus(camera.id, 'reconnecting', 15_000);
    expect(reconnecting.status_message).toMatch(/retrying in \d+ s/);
    await cam.restart();
    await waitForStatus(camera.id, 'running', 30_000);

    const changes = statusChanges(camera.id);
    expect(changes.slice(0, 3)).toEqual(['starting', 'running', 'reconnecting']);
    expect(changes[changes.length - 1]).toBe('running');
    const reconnectMessage = messages.find(
      (m) =>
        m.type === 'camera.status' &&
        (m.data as { camera_id: string; status: string }).camera_id === camera.id &&
        (m.data as { status: string }).status === 'reconnecting',
    );
    expect(reconnectMessage?.data).toMatchObject({
      camera_id: camera.id,
      camera_name: camera.name,
      previous_status: 'running',
    });
    await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
  });

  it('restarts a stream that stalls (no frame for 10 s) and recovers when the camera answers again', async () => {
    const cam = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const camera = await createCamera({ url: cam.url(), enabled: true });
    await waitForStatus(camera.id, 'running');
    const [pid] = childProcessIds('ffmpeg');

    // A frozen camera: the connection stays open, but nothing arrives.
    process.kill(cam.pid!, 'SIGSTOP');
    try {
      const stalled = await waitFor(
        'the stall to be noticed',
        async () => {
          const c = await getCamera(camera.id);
          return c.status !== 'running' ? c : undefined;
        },
        20_000,
      );
      expect(stalled.status).toBe('reconnecting');
      expect(stalled.status_message).toMatch(/^No video for 10 s/);
      expect(childProcessIds('ffmpeg')).not.toContain(pid);
    } finally {
      process.kill(cam.pid!, 'SIGCONT');
    }
    await waitForStatus(camera.id, 'running', 30_000);
    await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
  }, 60_000);

  it('restarts capture when the URL or frame rate changes, not for a new name', async () => {
    const first = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const second = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const camera = await createCamera({ url: first.url(), enabled: true });
    await waitForStatus(camera.id, 'running');
    const [pid] = childProcessIds('ffmpeg');

    await t.http
      .put(`/api/v1/cameras/${camera.id}`)
      .set('Authorization', admin)
      .send({ name: `${camera.name} renamed`, motion_sensitivity: 'high' })
      .expect(200);
    expect(childProcessIds('ffmpeg')).toEqual([pid]);

    const moved = await t.http
      .put(`/api/v1/cameras/${camera.id}`)
      .set('Authorization', admin)
      .send({ url: second.url() })
      .expect(200);
    expect(moved.body.status).toBe('starting');
    await waitForStatus(camera.id, 'running');
    const [pid2] = childProcessIds('ffmpeg');
    expect(pid2).not.toBe(pid);

    await t.http
      .put(`/api/v1/cameras/${camera.id}`)
      .set('Authorization', admin)
      .send({ frame_rate: 2 })
      .expect(200);
    await waitForStatus(camera.id, 'running');
    expect(childProcessIds('ffmpeg')).not.toContain(pid2);

    // Disabling through PUT stops capture like POST /stop.
    const disabled = await t.http
      .put(`/api/v1/cameras/${camera.id}`)
      .set('Authorization', admin)
      .send({ enabled: false })
      .expect(200);
    expect(disabled.body.status).toBe('stopped');
    expect(childProcessIds('ffmpeg')).toEqual([]);
    await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
  });

  it('ignores motion outside the enabled zones', async () => {
    // A square moves in the right half of the picture only.
    const cam = await FakeMjpegCamera.start({ ...CAMERA_SIZE, pattern: 'still', motionArea: 'right' });
    const half = (x0: number, x1: number) => [
      {
        name: 'Half',
        points: [
          [x0, 0],
          [x1, 0],
          [x1, 1],
          [x0, 1],
        ],
      },
    ];
    const left = await createCamera({
      source_type: 'mjpeg',
      url: cam.url(),
      enabled: true,
      detection_zones: half(0, 0.5),
    });
    const right = await createCamera({
      source_type: 'mjpeg',
      url: cam.url(),
      enabled: true,
      detection_zones: half(0.5, 1),
    });
    for (const camera of [left, right]) await waitForStatus(camera.id, 'running');
    await sleep(1_500); // past the detector's warm-up

    await cam.setPattern('motion');
    await waitFor('motion in the right zone', async () =>
      (await motionEvents(right.id)).length === 1 ? true : undefined,
    );
    await sleep(2_000);
    expect(await motionEvents(left.id)).toHaveLength(0);

    // With its zone disabled, the left camera watches the whole picture and sees the square.
    await t.http
      .put(`/api/v1/cameras/${left.id}`)
      .set('Authorization', admin)
      .send({ detection_zones: [{ ...half(0, 0.5)[0], enabled: false }] })
      .expect(200);
    await waitFor('motion without an enabled zone', async () =>
      (await motionEvents(left.id)).length === 1 ? true : undefined,
    );
    for (const camera of [left, right])
      await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
    await cam.stop();
  });

  it('makes one event per motion episode, and none while the cooldown lasts', async () => {
    const cam = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still', mounts: ['/a', '/b'] });
    const noCooldown = await createCamera({ url: cam.url('/a'), enabled: true, motion_cooldown_seconds: 0 });
    const longCooldown = await createCamera({
      url: cam.url('/b'),
      enabled: true,
      motion_cooldown_seconds: 3600,
    });
    for (const camera of [noCooldown, longCooldown]) await waitForStatus(camera.id, 'running');
    await sleep(1_500); // past the detector's warm-up

    // Two motion episodes with a quiet gap longer than an episode's end (2 s) between them.
    for (const round of [1, 2]) {
      for (const mount of ['/a', '/b']) await cam.setPattern('motion', mount);
      await waitFor(`motion episode ${round}`, async () =>
        (await motionEvents(noCooldown.id)).length >= round ? true : undefined,
      );
      await sleep(1_500);
      for (const mount of ['/a', '/b']) await cam.setPattern('still', mount);
      await sleep(4_000);
    }
    expect(await motionEvents(noCooldown.id)).toHaveLength(2);
    expect(await motionEvents(longCooldown.id)).toHaveLength(1);
    for (const camera of [noCooldown, longCooldown])
      await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
  });

  it('captures MJPEG over HTTP with basic auth, and sends camera.status and event.created on the WebSocket', async () => {
    const cam = await FakeMjpegCamera.start({
      ...CAMERA_SIZE,
      pattern: 'still',
      auth: { username: 'viewer', password: 'p@ss:w/rd%' },
    });
    const key = await t.createApiKey({ name: `ws ${++seq}`, scopes: ['read:events', 'read:cameras'] });
    const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/ws?api_key=${key.key}`);
    const received: { type: string; data: Record<string, unknown> }[] = [];
    ws.on('message', (raw: Buffer) => received.push(JSON.parse(raw.toString('utf8'))));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));

    const camera = await createCamera({
      source_type: 'mjpeg',
      url: cam.url(),
      username: 'viewer',
      password: 'p@ss:w/rd%',
      enabled: true,
    });
    await waitForStatus(camera.id, 'running');
    await sleep(1_500);
    await cam.setPattern('motion');
    const created = await waitFor('event.created on the WebSocket', () =>
      received.find((m) => m.type === 'event.created' && m.data.camera_id === camera.id),
    );
    expect(created.data).toMatchObject({ detection_type: 'motion', source_type: 'mjpeg' });
    const statuses = received
      .filter((m) => m.type === 'camera.status' && m.data.camera_id === camera.id)
      .map((m) => m.data.status);
    expect(statuses).toEqual(['starting', 'running']);
    ws.close();

    // A wrong password is an error the camera itself reports (retried, but not a network problem).
    await t.http
      .put(`/api/v1/cameras/${camera.id}`)
      .set('Authorization', admin)
      .send({ password: 'wrong-password' })
      .expect(200);
    const failed = await waitForStatus(camera.id, 'error');
    expect(failed.status_message).toMatch(/^Authentication failed/);
    expect(failed.status_message).not.toContain('wrong-password');
    await t.http.delete(`/api/v1/cameras/${camera.id}`).set('Authorization', admin).expect(204);
  });

  it('one instance captures a camera; another takes over when it stops, a new one resumes it at start', async () => {
    const cam = await FakeRtspCamera.start({ ...CAMERA_SIZE, pattern: 'still' });
    const first = await startTestApp();
    const instances = [first];
    try {
      const firstAdmin = `Bearer ${await first.adminToken()}`;
      const created = await first.http
        .post('/api/v1/cameras')
        .set('Authorization', firstAdmin)
        .send({ name: 'Shared', source_type: 'rtsp', url: cam.url(), frame_rate: 5, enabled: true })
        .expect(201);
      const id = created.body.id as string;
      const statusOn = async (app: TestApp, token: string) =>
        (await app.http.get(`/api/v1/cameras/${id}`).set('Authorization', token).expect(200)).body.status;
      await waitFor('running on the first instance', async () =>
        (await statusOn(first, firstAdmin)) === 'running' ? true : undefined,
      );

      // A second instance on the same database sees the camera but does not capture it as well.
      const second = await startTestApp({ databaseName: first.databaseName });
      instances.push(second);
      const secondAdmin = `Bearer ${await second.adminToken()}`;
      await sleep(1_000);
      const stats = await second.http
        .get('/api/v1/system/capture')
        .set('Authorization', secondAdmin)
        .expect(200);
      expect(stats.body.cameras).toEqual([]);
      expect(childProcessIds('ffmpeg')).toHaveLength(1);
      const conflict = await second.http
        .get(`/api/v1/cameras/${id}/snapshot`)
        .set('Authorization', secondAdmin)
        .expect(409);
      expect(conflict.body.detail).toMatch(/another instance/);

      // The first instance shuts down: the second takes the camera over at its next reconcile.
      await first.stopApp();
      await waitFor(
        'the second instance to take over',
        async () => ((await statusOn(second, secondAdmin)) === 'running' ? true : undefined),
        30_000,
      );
      const taken = await second.http
        .get('/api/v1/system/capture')
        .set('Authorization', secondAdmin)
        .expect(200);
      expect(taken.body.cameras).toHaveLength(1);

      // Restart: with every instance gone, a new one resumes the enabled camera when it starts.
      await second.stopApp();
      const third = await startTestApp({ databaseName: first.databaseName });
      instances.push(third);
      const thirdAdmin = `Bearer ${await third.adminToken()}`;
      await waitFor('the camera to run again after the restart', async () =>
        (await statusOn(third, thirdAdmin)) === 'running' ? true : undefined,
      );
    } finally {
      for (const instance of instances.reverse()) await instance.close();
    }
  }, 90_000);
});
