import type { Server } from 'node:http';

/**
 * Stops accepting connections and waits for the requests in flight to be answered, closing keep-alive
 * connections as they fall idle; after `timeoutMs` the remaining connections are cut.
 */
export function drainHttpServer(server: Server, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
    server.close(() => {
      clearInterval(idle);
      clearTimeout(deadline);
      resolve();
    });
    server.closeIdleConnections();
  });
}
