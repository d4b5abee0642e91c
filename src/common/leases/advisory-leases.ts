import { Logger } from '@nestjs/common';
import { Client } from 'pg';

/** The kinds of things leased, each with its own lock-key namespace. */
const NAMESPACES = {
  /** Live capture of a camera (CaptureService). */
  capture: 0x5649_4749_4c00_0000n,
  /** The realtime connection to a Protect controller (ProtectConnections). */
  protect: 0x5649_4749_4c50_0000n,
} as const;

export type LeaseKind = keyof typeof NAMESPACES;

/**
 * Which instance runs what. Several instances may share one database; each camera must be captured (each
 * Protect controller connected) by exactly one of them, or every motion would make one event per instance.
 * A lease is a PostgreSQL session-level advisory lock held on one dedicated connection per instance: it is
 * released when the instance lets go of it or when its connection ends (a crashed or killed instance), after
 * which another instance's periodic reconcile claims it.
 */
export class AdvisoryLeases {
  private readonly logger: Logger;
  private client: Client | null = null;
  private connecting: Promise<Client | null> | null = null;
  private readonly held = new Set<string>();
  private closed = false;

  /** `onLost` runs when the connection (and so every lease) is lost; the owner must stop what it runs. */
  constructor(
    private readonly databaseUrl: string,
    private readonly kind: LeaseKind,
    private readonly onLost: (ids: string[]) => void,
  ) {
    this.logger = new Logger(`Leases:${kind}`);
  }

  holds(id: string): boolean {
    return this.held.has(id);
  }

  /** Takes the lease of `id` if no instance holds it; true when this instance holds it afterwards. */
  async claim(id: string): Promise<boolean> {
    if (this.held.has(id)) return true;
    const client = await this.connection();
    if (!client) return false;
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [
      leaseKey(this.kind, id),
    ]);
    if (rows[0]?.ok) this.held.add(id);
    return rows[0]?.ok === true;
  }

  async release(id: string): Promise<void> {
    if (!this.held.delete(id) || !this.client) return;
    try {
      await this.client.query('SELECT pg_advisory_unlock($1::bigint)', [leaseKey(this.kind, id)]);
    } catch (error) {
      // The connection is going or gone; its end releases the lock anyway.
      this.logger.warn({ msg: 'Could not release a lease', error: (error as Error).message });
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
      application_name: `vigil-${this.kind}-leases`,
    });
    client.on('error', (error: Error) => this.lost(client, error.message));
    client.on('end', () => this.lost(client, 'connection ended'));
    try {
      await client.connect();
    } catch (error) {
      this.logger.warn({
        msg: 'Could not open the lease connection',
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
    this.logger.warn({ msg: 'Lease connection lost; what it held stops until reclaimed', reason });
    client.end().catch(() => undefined);
    this.onLost(lost);
  }
}

/** A stable 64-bit lock key per id, in its kind's namespace. */
function leaseKey(kind: LeaseKind, id: string): string {
  const hex = id.replace(/-/g, '').slice(0, 16);
  // Set the top bit pattern apart from other advisory locks (which use small constants).
  return BigInt.asIntN(64, BigInt(`0x${hex}`) ^ NAMESPACES[kind]).toString();
}
