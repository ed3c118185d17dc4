// Reading a file while another writer (DuckDB's COPY) appends to it, so what follows the writing
// overlaps it instead of waiting for its end.

import type { FileHandle } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

/** Bytes per read. */
const READ_BYTES = 1 << 20;
/** How long to wait for more bytes while the writer has not finished. */
const POLL_MS = 2;

/**
 * The bytes of `file` as they are appended, until `writing` has settled and all of them are read;
 * its failure is thrown. `cleanup` runs at the end, however the iteration ends.
 */
export async function* tailFile(file: FileHandle, writing: Promise<unknown>, cleanup: () => Promise<void>): AsyncGenerator<Uint8Array> {
  let settled = false;
  const done = writing.then(() => (settled = true), () => (settled = true));
  try {
    for (let position = 0; ;) {
      // Settled before this read: the read sees every byte written.
      const last = settled;
      const chunk = Buffer.allocUnsafe(READ_BYTES);
      const { bytesRead } = await file.read(chunk, 0, READ_BYTES, position);
      if (bytesRead > 0) {
        position += bytesRead;
        yield chunk.subarray(0, bytesRead);
      } else if (last) {
        await writing;
        return;
      } else {
        await Promise.race([done, delay(POLL_MS)]);
      }
    }
  } finally {
    await cleanup();
  }
}

/**
 * `source` with its first item already read, so what fails before it throws here. Ending the
 * iteration early (or never starting it) and calling `return` ends `source`.
 */
export async function readAhead<T>(source: AsyncGenerator<T>): Promise<AsyncIterable<T>> {
  let head: IteratorResult<T> | undefined = await source.next();
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const first = head;
        head = undefined;
        return first ? Promise.resolve(first) : source.next();
      },
      return: () => source.return(undefined),
    }),
  };
}
