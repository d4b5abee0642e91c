import { Logger } from '@nestjs/common';
import { Client } from 'pg';

/**
 * Which instance captures which camera. Several instances may share one database; each camera must be
 * captured by exactly one of them, or every motion would make one event per instance. A camera's lease is
 * a PostgreSQL session-level advisory lock held on one dedicated connection per instance: it is released
 * when the instance lets go of it or when its connection ends (a crashed or killed instance), after which
 * another instance's periodic reconcile claims the camera.
 */
export class CaptureLeases {
  private readonly logger = new Logger('CaptureLeases');
  private client: Client | null = null;
  private connecting: Promise<Client | null> | null = null;
  private readonly held = new Set<string>();
  private closed = false;

  /** `onLost` runs when the connection (and so every lease) is lost; the owner must stop capturing. */
  constructor(
    private readonly databaseUrl: string,
    private readonly onLost: (cameraIds: string[]) => void,
  ) {}

  holds(cameraId: string): boolean {
    return this.held.has(cameraId);
  }

  /** Takes the camera's lease if no instance holds it; true when this instance holds it afterwards. */
  async claim(cameraId: string): Promise<boolean> {
    if (this.held.has(cameraId)) return true;
    const client = await this.connection();
    if (!client) return false;
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [
      leaseKey(cameraId),
    ]);
    if (rows[0]?.ok) this.held.add(cameraId);
    return rows[0]?.ok === true;
  }

  async release(cameraId: string): Promise<void> {
    if (!this.held.delete(cameraId) || !this.client) return;
    try {
      await this.client.query('SELECT pg_advisory_unlock($1::bigint)', [leaseKey(cameraId)]);
    } catch (error) {
      // The connection is going or gone; its end releases the lock anyway.
      this.logger.warn({ msg: 'Could not release a capture lease', error: (error as Error).message });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.held.clear();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private connection(): Promise<Client | null> {
    if (this.client) return Promise.resolve(this.client);
    if (this.closed) return Promise.resolve(null);
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<Client | null> {
    const client = new Client({
      connectionString: this.databaseUrl,
      application_name: 'vigil-capture-leases',
    });
    client.on('error', (error: Error) => this.lost(client, error.message));
    client.on('end', () => this.lost(client, 'connection ended'));
    try {
      await client.connect();
    } catch (error) {
      this.logger.warn({
        msg: 'Could not open the capture lease connection',
        error: (error as Error).message,
      });
      return null;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return null;
    }
    this.client = client;
    return client;
  }

  private lost(client: Client, reason: string): void {
    if (this.client !== client) return;
    this.client = null;
    const lost = [...this.held];
    this.held.clear();
    if (this.closed) return;
    this.logger.warn({ msg: 'Capture lease connection lost; its cameras stop until reclaimed', reason });
    client.end().catch(() => undefined);
    this.onLost(lost);
  }
}

/** A stable 64-bit lock key per camera, in a namespace of its own. */
function leaseKey(cameraId: string): string {
  const hex = cameraId.replace(/-/g, '').slice(0, 16);
  // Set the top bit pattern apart from other advisory locks (which use small constants).
  return BigInt.asIntN(64, BigInt(`0x${hex}`) ^ 0x5649_4749_4c00_0000n).toString();
}
