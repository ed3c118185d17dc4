// Keep-alive connections end with the app. Node's server.close() waits for every connection, and its
// closeIdleConnections() (Fastify's default on close) passes over two kinds that stay open for a
// minute or more: a connection that never sent a request (a browser's preconnect) and one whose
// request was under way at the close (answered with keep-alive). Both would hold a SIGTERM until its
// timeout, and then report requests cut off that never were.

import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

export function endConnectionsOnClose(app: FastifyInstance): void {
  /** Each open connection and its requests under way. */
  const underWay = new Map<Socket, number>();
  let closing = false;

  app.server.on('connection', (socket: Socket) => {
    underWay.set(socket, 0);
    socket.once('close', () => underWay.delete(socket));
  });
  app.server.on('request', (req, res) => {
    const socket = req.socket;
    underWay.set(socket, (underWay.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (underWay.get(socket) ?? 1) - 1;
      underWay.set(socket, left);
      // The answer went with `Connection: close` (below) unless it was not Fastify's; end it here then.
      if (closing && left === 0) socket.end();
    });
  });
  // An answer given while closing tells the client the connection ends with it.
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  app.addHook('preClose', async () => {
    closing = true;
    for (const [socket, requests] of underWay) if (requests === 0) socket.destroy();
  });
}
