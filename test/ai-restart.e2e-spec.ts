import { DescribeQueueService } from '../src/modules/ai/describe-queue.service';
import { FakeAiServer, stopAllFakeAiServers } from './fakes/ai-providers';
import {
  API_KEYS,
  createCamera,
  getEvent,
  ingest,
  ledger,
  putSettings,
  waitForStatus,
} from './support/ai-setup';
import { waitFor } from './support/processes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The description queue across restarts and instances: events pending or in flight when the service stops
 * are described by the next one (nothing is lost), and two instances on one database never describe an
 * event twice. Instances share DATA_DIR (images, encryption key), as a restarted deployment does.
 */
describe('AI description queue across restarts and instances (e2e)', () => {
  let openai: FakeAiServer;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    openai = await FakeAiServer.start({ kind: 'openai', apiKey: API_KEYS.openai });
  });

  afterAll(async () => {
    try {
      // Apps on a borrowed database first; the owner drops it.
      for (const app of apps.reverse()) await app.close();
    } finally {
      await stopAllFakeAiServers();
    }
  });

  beforeEach(() => openai.reset());

  async function enable(t: TestApp, admin: string, timeoutMs = 30_000): Promise<void> {
    await putSettings(t, admin, {
      ai_providers: {
        openai: { enabled: true, api_key: API_KEYS.openai, base_url: openai.baseUrl, timeout_ms: timeoutMs },
      },
      ai_provider_order: ['openai'],
    });
  }

  it('describes after a restart the events that were pending or in flight at shutdown', async () => {
    const first = await startTestApp();
    apps.push(first);
    const admin = `Bearer ${await first.adminToken()}`;
    const cameraId = await createCamera(first, 'Yard');
    await enable(first, admin);
    // The provider never answers: the first 4 events (the concurrency) are in flight, the other 2 wait.
    openai.failNext(100, 'hang');
    const events = [];
    for (let i = 0; i < 6; i++) events.push(await ingest(first, admin, cameraId));
    await waitFor('4 calls in flight', () => openai.requests.length === 4, 10_000);
    expect(first.app.get(DescribeQueueService).inProgress).toBe(4);
    for (const event of events)
      expect((await getEvent(first, admin, event.id)).description_status).toBe('pending');

    await first.stopApp();
    openai.reset();

    const second = await startTestApp({
      databaseName: first.databaseName,
      env: { DATA_DIR: first.config.dataDir },
    });
    apps.push(second);
    const secondAdmin = `Bearer ${await second.adminToken()}`;
    for (const event of events) {
      const done = await waitForStatus(second, secondAdmin, event.id, 'complete');
      expect(done.provider_used).toBe('openai');
    }
    expect(openai.requests).toHaveLength(6);
    const rows = await ledger(second);
    // The calls cut short at shutdown are in the ledger as failures, not counted against the provider.
    const cancelled = rows.filter((r) => !r.success);
    expect(cancelled).toHaveLength(4);
    for (const row of cancelled) expect(row.error).toBe('cancelled: the service is shutting down');
    expect(rows.filter((r) => r.success)).toHaveLength(6);
    const queue = await second.sql<{ due: Date | null; attempts: number }>(
      'SELECT description_due_at AS due, description_attempts AS attempts FROM events',
    );
    expect(queue.every((r) => r.due === null && r.attempts === 0)).toBe(true);
    await second.stopApp();
  }, 60_000);

  it('never describes an event twice with two instances on one database', async () => {
    const first = await startTestApp();
    apps.push(first);
    const admin = `Bearer ${await first.adminToken()}`;
    const cameraId = await createCamera(first, 'Street');
    // Before the second instance starts: without Redis, settings changes reach only the instance that made them.
    await enable(first, admin);
    const second = await startTestApp({
      databaseName: first.databaseName,
      env: { DATA_DIR: first.config.dataDir },
    });
    apps.push(second);
    openai.setLatency(150);
    // The second instance learns of new events by polling (no Redis here): make it poll often.
    const queues = [first, second].map((app) => app.app.get(DescribeQueueService));
    for (const queue of queues) queue.configureTiming({ pollIntervalMs: 100 });
    const busiest = [0, 0];
    const sampler = setInterval(
      () => queues.forEach((q, i) => (busiest[i] = Math.max(busiest[i], q.inProgress))),
      10,
    );
    const ids: string[] = [];
    try {
      for (let i = 0; i < 16; i++) ids.push((await ingest(first, admin, cameraId)).id);
      for (const id of ids) await waitForStatus(first, admin, id, 'complete', 20_000);
    } finally {
      clearInterval(sampler);
    }
    // Both instances described events.
    expect(busiest[0]).toBeGreaterThan(0);
    expect(busiest[1]).toBeGreaterThan(0);

    const rows = await ledger(first);
    expect(rows.filter((r) => r.success)).toHaveLength(16);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(16);
    expect(openai.requests).toHaveLength(16);
  }, 60_000);
});
