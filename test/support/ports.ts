// A loopback port free at the time of asking, for a process a test or a benchmark starts.

import { createServer } from 'node:net';

export const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  });
  server.on('error', reject);
});
