// Test helper: an HTTP server on 127.0.0.1 that answers every request with 200 and a body that never ends (64 kB
// pieces of spaces, as fast as the client reads), counting what it sent; what a server gone wrong does to a client
// that reads a whole answer.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EndlessServer {
  url: string;
  /** Bytes written so far, and whether the client has closed the connection. */
  sent(): number;
  closed(): boolean;
  close(): void;
}

export async function endlessServer(contentType = 'application/json'): Promise<EndlessServer> {
  let sent = 0;
  let closed = false;
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': contentType });
    const chunk = Buffer.alloc(64 * 1024, ' ');
    res.on('close', () => (closed = true));
    const pump = () => {
      while (!closed && res.write(chunk)) sent += chunk.length;
      if (!closed) res.once('drain', pump);
    };
    pump();
  }).listen(0, '127.0.0.1');
  await new Promise((done) => server.once('listening', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent: () => sent,
    closed: () => closed,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
