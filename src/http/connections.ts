// Keep-alive connections end with the app. Node's server.close() closes the idle connections once
// and waits for the others, passing over two kinds that then stay open for a minute or more: a
// connection that never sent a request (a browser's preconnect) and one whose request was under
// way at the close (answered with keep-alive). Both would hold a SIGTERM until its timeout, and
// then report requests cut off that never were.

import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

export function endConnectionsOnClose(app: FastifyInstance): void {
  /** Connections that have sent no request yet. */
  const unused = new Set<Socket>();
  let closing = false;

  app.server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  app.server.on('request', (req) => unused.delete(req.socket));
  // An answer given while closing ends its connection (Node closes it once the answer is sent).
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  // Runs before Fastify's server.close(), which closes the connections idle after a request.
  app.addHook('preClose', async () => {
    closing = true;
    for (const socket of unused) socket.destroy();
  });
}
