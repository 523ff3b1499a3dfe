// The bound on the open connections of `metrl serve` and `metrl view`, kept so that slow clients cannot lock normal
// ones out. Node's own server.maxConnections resets every connection over the limit: 64 slow-header connections that
// reconnect whenever closed then hold every slot, and normal requests are reset. Here a connection
// over the limit takes the slot of the oldest connection that is not being answered (one still sending its headers,
// or idle between kept-alive requests), which is cut; only when every slot holds a request being answered is the new
// connection told so, with 503 and Retry-After, and closed. A normal client sends its request as soon as it
// connects, so it is served; a slow one loses its slot to the next arrival.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Seconds a client told 503 is asked to wait. */
const RETRY_AFTER_S = 1;

/** How long a refused connection may take to read its 503 before it is destroyed. */
const REFUSED_LINGER_MS = 1000;

const BUSY_BODY = JSON.stringify({
  error: {
    message: `every connection is answering a request; retry in ${RETRY_AFTER_S} s`,
    type: 'server_error',
    param: null,
    code: null,
  },
});
const BUSY_RESPONSE = `HTTP/1.1 503 Service Unavailable\r\nRetry-After: ${RETRY_AFTER_S}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BUSY_BODY)}\r\nConnection: close\r\n\r\n${BUSY_BODY}`;

/**
 * Keep at most `max` connections open on `server`, as described above. The request handler asks `refused(socket)`
 * and leaves a request alone on a connection that was already told 503.
 */
export function limitConnections(server: Server, max: number): { refused(socket: Socket): boolean } {
  // Open connections, oldest first, with the number of their requests being answered now.
  const open = new Map<Socket, { answering: number }>();
  const refused = new WeakSet<Socket>();

  server.on('connection', (socket: Socket) => {
    if (open.size >= max) {
      const idle = [...open].find(([, state]) => state.answering === 0)?.[0];
      if (idle === undefined) {
        refused.add(socket);
        socket.end(BUSY_RESPONSE);
        setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
        return;
      }
      open.delete(idle);
      idle.destroy();
    }
    open.set(socket, { answering: 0 });
    socket.once('close', () => open.delete(socket));
  });

  // Registered before the request handler (prependListener): a connection counts as being answered from the moment
  // its request has arrived, so it is never cut for a newcomer.
  server.prependListener('request', (req, res) => {
    if (refused.has(req.socket)) return;
    const state = open.get(req.socket);
    if (state === undefined) return;
    state.answering++;
    res.once('close', () => state.answering--);
  });
  return { refused: (socket) => refused.has(socket) };
}
