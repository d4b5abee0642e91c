import { stopAllFakeCameras } from './fakes/fake-lifecycle';
import { FakeProtectConsole } from './fakes/protect-console';
import { waitFor } from './support/processes';
import { startTestApp, TestApp } from './support/test-app';

describe('protect (e2e)', () => {
  let t: TestApp;
  let fake: FakeProtectConsole;
  let admin: string;
  const auth = () => ({ Authorization: `Bearer ${admin}` });

  beforeAll(async () => {
    fake = await FakeProtectConsole.start();
    t = await startTestApp();
    admin = await t.adminToken();
  });

  afterAll(async () => {
    await t?.close();
    await stopAllFakeCameras();
  });

  it('connects, lists cameras, adopts one and turns a smart detection into an event', async () => {
    const created = await t.http
      .post('/api/v1/protect/controllers')
      .set(auth())
      .send({ name: 'Home', host: '127.0.0.1', port: fake.port, username: 'vigil', password: 'vigil-secret' })
      .expect(201);
    expect(created.body).toMatchObject({
      status: 'connected',
      console_name: 'Vigil Test NVR',
      camera_count: 2,
    });
    expect(JSON.stringify(created.body)).not.toContain('vigil-secret');
    const cameras = (
      await t.http.get(`/api/v1/protect/controllers/${created.body.id}/cameras`).set(auth()).expect(200)
    ).body;
    expect(cameras).toHaveLength(2);
    const driveway = cameras.find((c: { name: string }) => c.name === 'Driveway');
    const camera = await t.http
      .post('/api/v1/cameras')
      .set(auth())
      .send({
        name: 'Driveway',
        source_type: 'protect',
        protect_controller_id: created.body.id,
        protect_camera_id: driveway.protect_camera_id,
        enabled: true,
      })
      .expect(201);
    expect(camera.body.status).toBe('running');
    const sent = fake.startSmartDetection(driveway.protect_camera_id, ['person'], { score: 80 });
    const event = await waitFor('the event', async () => {
      const page = (await t.http.get('/api/v1/events').set(auth()).expect(200)).body;
      return page.items[0];
    });
    expect(event).toMatchObject({
      detection_type: 'person',
      confidence: 80,
      source_type: 'protect',
      protect_event_id: sent.eventId,
    });
    expect(event.thumbnail_url).not.toBeNull();
    fake.endSmartDetection(sent.eventId!, { score: 95, licensePlate: 'ABC123' });
    await waitFor('the update', async () => {
      const e = (await t.http.get(`/api/v1/events/${event.id}`).set(auth()).expect(200)).body;
      return e.confidence === 95 ? e : undefined;
    });
  });
});
