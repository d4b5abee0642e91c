import { format } from 'node:util';
import type { ProtectApi, ProtectLogging } from 'unifi-protect';

/*
 * The unifi-protect library (4.28.0, pinned: newer majors need Node 22) is ESM-only; this CommonJS service
 * loads it with import(). Its ProtectApi never throws: login(), getBootstrap() and getSnapshot() answer
 * false/null and say why only in log lines, which ProtectLog collects.
 */

type ProtectModule = typeof import('unifi-protect');

let protectModule: Promise<ProtectModule> | null = null;

function loadProtect(): Promise<ProtectModule> {
  protectModule ??= import('unifi-protect');
  return protectModule;
}

export interface ProtectLogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}

/** ANSI colour codes (util.inspect adds them to errors the library logs). */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const stripAnsi = (text: string) => text.replace(ANSI, '');

/** The library's log lines: kept (the last 50) to explain a failure, and passed on to our logger. */
export class ProtectLog implements ProtectLogging {
  readonly lines: ProtectLogLine[] = [];

  constructor(private readonly sink?: (line: ProtectLogLine) => void) {}

  debug = (message: string, ...parameters: unknown[]) => this.add('debug', message, parameters);
  info = (message: string, ...parameters: unknown[]) => this.add('info', message, parameters);
  warn = (message: string, ...parameters: unknown[]) => this.add('warn', message, parameters);
  error = (message: string, ...parameters: unknown[]) => this.add('error', message, parameters);

  /** Lines written since `mark` (a length of `lines` taken earlier), in order. */
  since(mark: number): ProtectLogLine[] {
    return this.lines.slice(Math.min(mark, this.lines.length));
  }

  private add(level: ProtectLogLine['level'], message: string, parameters: unknown[]): void {
    // The library formats like util.format; ANSI colours can appear in inspected errors.
    const line = { level, message: stripAnsi(format(message, ...parameters)) };
    this.lines.push(line);
    if (this.lines.length > 50) this.lines.splice(0, this.lines.length - 50);
    this.sink?.(line);
  }
}

/**
 * A ProtectApi for one console. The library never verifies the console's certificate (its connection pools
 * are built with `rejectUnauthorized: false` in reset(), which login() and logout() call); with `verifyTls` a
 * subclass rebuilds both pools (HTTP and the realtime WebSocket) with verification after every reset.
 */
export async function createProtectApi(log: ProtectLogging, verifyTls: boolean): Promise<ProtectApi> {
  const protect = await loadProtect();
  if (!verifyTls) return new protect.ProtectApi(log);
  const { Agent, interceptors, Pool } = await import('undici');

  class VerifyingProtectApi extends protect.ProtectApi {
    override reset(): void {
      super.reset();
      // Fields of ProtectApi 4.28.0 (pinned exactly): the address, the HTTP pool and the WebSocket agent.
      const self = this as unknown as {
        nvrAddress: string;
        dispatcher?: { destroy(): Promise<void> };
        wsAgent: unknown;
      };
      if (!self.nvrAddress) return;
      void self.dispatcher?.destroy().catch(() => undefined);
      void (self.wsAgent as { destroy(): Promise<void> } | null)?.destroy().catch(() => undefined);
      const connect = { rejectUnauthorized: true };
      self.dispatcher = new Pool(`https://${self.nvrAddress}`, {
        allowH2: true,
        clientTtl: 60_000,
        connect,
        connections: 5,
      }).compose(
        interceptors.retry({
          maxRetries: 5,
          maxTimeout: 1500,
          minTimeout: 100,
          timeoutFactor: 2,
          methods: ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'],
          statusCodes: [400, 404, 429, 500, 502, 503, 504],
        }),
      );
      self.wsAgent = new Agent({ connect: { keepAlive: true, ...connect }, pipelining: 0 });
    }
  }
  return new VerifyingProtectApi(log);
}

/** `host:port` as the library wants it (IPv6 in brackets). */
export function consoleAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Whether the realtime socket of a logged-in ProtectApi is open (a private field of 4.28.0). */
export function realtimeOpen(api: ProtectApi): boolean {
  return (api as unknown as { _eventsWs: unknown })._eventsWs != null;
}

/** Forgets an instance: closes its sockets and pools; nothing it started keeps the process alive. */
export function disposeProtectApi(api: ProtectApi): void {
  api.reset();
  api.removeAllListeners();
}
