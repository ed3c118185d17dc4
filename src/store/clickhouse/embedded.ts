// The embedded chDB engine. chDB runs one engine per process, started by the first connection to
// its data directory with that connection's command-line settings; chdb's client connection passes
// none. So a session of ours opens the directory first, with the settings below, and lives as long
// as the connections that share its engine.
//
// The setting: chDB sizes the merge and mutation pool to the cores (2 threads here) and takes 2
// tasks a thread, 4 in all. A mutation (a privacy delete, a merge's rewrite) is a task per part;
// past the pool's tasks the scheduler backs off with a random wait of up to a second before the
// next part, so a delete over a dozen monthly parts waited ~1 s for nothing (bench/RESULTS.md,
// issue 31). 8 tasks a thread take 16 at once, as many as a server's 16 threads run, on the same
// threads. More tasks under way hold more parts' files open: a process's descriptor limit bounds it.

import { resolve } from 'node:path';

/** The engine's settings unless the caller gives its own. */
export const CHDB_ENGINE_ARGS: readonly string[] = ['--background_merges_mutations_concurrency_ratio=8'];

interface ChdbSession {
  readonly path: string;
  close(): void;
}

export interface ChdbEngineModule {
  Session: new (path: string, options: { connectionArgs: string[] }) => ChdbSession;
}

interface Held {
  session: ChdbSession;
  users: number;
}

/** One session per directory (`:memory:`: a temporary one, shared as chdb shares it). */
const held = new Map<string, Held>();

/**
 * The directory to connect to, with the engine started there; `release` when the connection closed.
 * `:memory:` becomes a temporary directory, removed when its last user releases it.
 */
export function holdEngine(chdb: ChdbEngineModule, path: string, args: readonly string[] = CHDB_ENGINE_ARGS): { path: string; release(): void } {
  const key = path === ':memory:' ? path : resolve(path);
  let engine = held.get(key);
  if (engine === undefined) {
    engine = { session: new chdb.Session(key === ':memory:' ? '' : key, { connectionArgs: [...args] }), users: 0 };
    held.set(key, engine);
  }
  engine.users++;
  const current = engine;
  let released = false;
  return {
    path: current.session.path,
    release() {
      if (released) return;
      released = true;
      if (--current.users > 0) return;
      held.delete(key);
      current.session.close();
    },
  };
}
