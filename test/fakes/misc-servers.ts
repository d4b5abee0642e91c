import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { trackFake, untrackFake } from './fake-lifecycle';

/** A server on 127.0.0.1 started by a test. `close()` also drops the connections that are still open. */
export interface FakeServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Accepts TCP connections and never sends a byte: a camera that hangs. Clients must give up through their own
 * timeouts (ffmpeg's `-timeout`), which is what timeout handling is tested against.
 */
export function startSilentTcpServer(): Promise<FakeServer> {
  return listen(createTcpServer(() => undefined));
}

/** A plain HTTP server on 127.0.0.1 for one-off behaviours (wrong content types, slow answers, redirects). */
export function startHttpServer(handler: RequestListener): Promise<FakeServer> {
  return listen(createHttpServer(handler));
}

/** A port on 127.0.0.1 that nothing listens on right now: connecting to it is refused. */
export async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = portOf(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function listen(server: Server): Promise<FakeServer> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  let closed: Promise<void> | null = null;
  const fake: FakeServer = {
    port: portOf(server),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        untrackFake(tracked);
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
      return closed;
    },
  };
  const tracked = { stop: () => fake.close() };
  trackFake(tracked);
  return fake;
}

function portOf(server: Server): number {
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('server is not listening on a TCP port');
  return address.port;
}
