// Workspaces and their API keys. Keys are stored as SHA-256 hashes; the lookup result is cached
// because every request authenticates.

import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { LEASE_DEFAULTS, withLease } from './leases.js';
import type { ControlSql, ControlStore } from './store.js';

export type KeyKind = 'secret' | 'publishable';
export const KEY_PREFIX: Record<KeyKind, string> = { secret: 'sk_', publishable: 'pk_' };
/** What `rotate` replaces: an API key, or the payment webhook's signing secret. */
export type CredentialKind = KeyKind | 'webhook';
export const CREDENTIAL_KINDS: readonly CredentialKind[] = ['secret', 'publishable', 'webhook'];

/** Which of the payment processor's modes counts: notifications of the other mode are ignored. */
export const PAYMENTS_MODES = ['live', 'test'] as const;
export type PaymentsMode = (typeof PAYMENTS_MODES)[number];

export interface Workspace {
  workspace_id: string;
  name: string;
}

export interface WorkspaceSettings extends Workspace {
  payments_mode: PaymentsMode;
  /** Events and page views older than this many days are deleted (null: kept forever). */
  retention_days: number | null;
}

export interface ListedWorkspace extends Workspace {
  created_at: Date;
}

/** The credentials a rotation replaced, new values only; shown once. */
export interface RotatedCredentials extends Workspace {
  secret_key?: string;
  publishable_key?: string;
  stripe_webhook_secret?: string;
}

export interface KeyOwner {
  workspaceId: string;
  kind: KeyKind;
}

export interface CreatedWorkspace extends Workspace {
  secret_key: string;
  publishable_key: string;
  stripe_webhook_secret: string;
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');
const token = (bytes: number) => randomBytes(bytes).toString('base64url');

export function newKey(kind: KeyKind): string {
  return `${KEY_PREFIX[kind]}${token(24)}`;
}

const newWebhookSecret = () => `whsec_${token(24)}`;

/** `keys.workspace_id`: the id rows imported under it already carry (the benches' datasets); a new one otherwise. */
function newWorkspace(name: string, keys: Partial<Omit<CreatedWorkspace, 'name'>>): CreatedWorkspace {
  return {
    workspace_id: keys.workspace_id ?? `ws_${token(9)}`,
    name,
    secret_key: keys.secret_key ?? newKey('secret'),
    publishable_key: keys.publishable_key ?? newKey('publishable'),
    stripe_webhook_secret: keys.stripe_webhook_secret ?? newWebhookSecret(),
  };
}

async function insertWorkspace(tx: ControlSql, created: CreatedWorkspace): Promise<CreatedWorkspace> {
  await tx.run('INSERT INTO workspaces (workspace_id, name, stripe_webhook_secret) VALUES ($1, $2, $3)',
    [created.workspace_id, created.name, created.stripe_webhook_secret]);
  await tx.run('INSERT INTO api_keys (key_hash, workspace_id, kind) VALUES ($1, $2, $3), ($4, $2, $5)',
    [hashKey(created.secret_key), created.workspace_id, 'secret', hashKey(created.publishable_key), 'publishable']);
  return created;
}

/** Moves when webhook settings change through this process (ControlCaches.settingsChanges). */
export const settingsGeneration = (store: ControlStore): number => store.caches.settingsChanges;

const settingsChanged = (store: ControlStore) => { store.caches.settingsChanges++; };

export class Workspaces {
  private readonly owners = new Map<string, KeyOwner>();

  constructor(private readonly store: ControlStore) {}

  async count(): Promise<number> {
    const rows = await this.store.all('SELECT count(*) AS n FROM workspaces');
    return Number(rows[0]?.n ?? 0);
  }

  async get(workspaceId: string): Promise<WorkspaceSettings | null> {
    const rows = await this.store.all(`SELECT workspace_id, name, coalesce(payments_mode, 'live') AS payments_mode, retention_days
      FROM workspaces WHERE workspace_id = $1`, [workspaceId]);
    const row = rows[0];
    return row ? { ...(row as unknown as WorkspaceSettings), retention_days: row.retention_days === null ? null : Number(row.retention_days) } : null;
  }

  /** Sets the workspace's retention in days (null: forever); false when the workspace does not exist. */
  async setRetention(workspaceId: string, days: number | null): Promise<boolean> {
    return (await this.store.run('UPDATE workspaces SET retention_days = $2 WHERE workspace_id = $1', [workspaceId, days])) === 1;
  }

  /** Sets the workspace's payments mode; the previous one, or null when the workspace does not exist. */
  async setPaymentsMode(workspaceId: string, mode: PaymentsMode): Promise<PaymentsMode | null> {
    const previous = await this.store.transaction(async (tx) => {
      const found = (await tx.all(`SELECT coalesce(payments_mode, 'live') AS payments_mode FROM workspaces
        WHERE workspace_id = $1`, [workspaceId]));
      const previous = found[0]?.payments_mode as PaymentsMode | undefined;
      if (!previous) return null;
      await tx.run('UPDATE workspaces SET payments_mode = $2 WHERE workspace_id = $1', [workspaceId, mode]);
      return previous;
    });
    settingsChanged(this.store);
    return previous;
  }

  /** Every workspace, oldest first; no credentials. */
  async list(): Promise<ListedWorkspace[]> {
    const rows = await this.store.all('SELECT workspace_id, name, created_at FROM workspaces ORDER BY created_at, workspace_id');
    return rows.map((r) => ({ workspace_id: String(r.workspace_id), name: String(r.name), created_at: r.created_at as Date }));
  }

  /** Creates a workspace with fresh keys (or the given ones) and returns them; shown only once. */
  async create(name: string, keys: Partial<Omit<CreatedWorkspace, 'name'>> = {}): Promise<CreatedWorkspace> {
    return this.store.transaction((tx) => insertWorkspace(tx, newWorkspace(name, keys)));
  }

  /**
   * The first start without BOOTSTRAP_* keys: creates the workspace `name` with new keys when the
   * store holds none, and returns it (null otherwise). Nodes starting together on an empty store
   * create one: the one holding the lease creates it, the others find it or skip.
   */
  async createFirst(name: string): Promise<CreatedWorkspace | null> {
    // Every later start finds a workspace: a read, no lease written.
    if ((await this.count()) > 0) return null;
    const done = await withLease(this.store, 'bootstrap', `bootstrap:${process.pid}:${randomUUID()}`, LEASE_DEFAULTS,
      async () => ((await this.count()) === 0 ? this.create(name) : null));
    return done?.value ?? null;
  }

  /**
   * Makes the workspace named `name` hold exactly the given credentials (BOOTSTRAP_*), creating it
   * when missing. Keys of a kind not given are left as they are.
   */
  async ensure(name: string, keys: Partial<Omit<CreatedWorkspace, 'workspace_id' | 'name'>>): Promise<Workspace> {
    // One transaction: nodes starting together with the same keys collide on a key's hash, and the
    // one that lost runs again and finds the workspace the other created.
    const ensured = await this.store.transaction(async (tx) => {
      const rows = await tx.all('SELECT workspace_id, name FROM workspaces WHERE name = $1 ORDER BY created_at LIMIT 1', [name]);
      const existing = rows[0] as Workspace | undefined;
      if (!existing) return insertWorkspace(tx, newWorkspace(name, keys));
      for (const kind of ['secret', 'publishable'] as const) {
        const key = keys[`${kind}_key`];
        if (!key) continue;
        await tx.run('DELETE FROM api_keys WHERE workspace_id = $1 AND kind = $2', [existing.workspace_id, kind]);
        await tx.run('DELETE FROM api_keys WHERE key_hash = $1', [hashKey(key)]);
        await tx.run('INSERT INTO api_keys (key_hash, workspace_id, kind) VALUES ($1, $2, $3)', [hashKey(key), existing.workspace_id, kind]);
      }
      if (keys.stripe_webhook_secret) {
        await tx.run('UPDATE workspaces SET stripe_webhook_secret = $2 WHERE workspace_id = $1', [existing.workspace_id, keys.stripe_webhook_secret]);
      }
      return existing;
    });
    this.owners.clear();
    settingsChanged(this.store);
    return { workspace_id: ensured.workspace_id, name: ensured.name };
  }

  /**
   * Replaces the workspace's credentials of the given kinds with fresh ones, in one transaction,
   * and returns them (shown only once). The old ones stop working at once: there is no overlap,
   * as with a key rolled to expire now. Null when the workspace does not exist.
   */
  async rotate(workspaceId: string, kinds: readonly CredentialKind[]): Promise<RotatedCredentials | null> {
    const rotated = await this.store.transaction(async (tx) => {
      const found = (await tx.all('SELECT workspace_id, name FROM workspaces WHERE workspace_id = $1', [workspaceId]));
      const ws = found[0] as Workspace | undefined;
      if (!ws) return null;
      const result: RotatedCredentials = { workspace_id: ws.workspace_id, name: ws.name };
      for (const kind of kinds) {
        if (kind === 'webhook') {
          result.stripe_webhook_secret = newWebhookSecret();
          await tx.run('UPDATE workspaces SET stripe_webhook_secret = $2 WHERE workspace_id = $1', [workspaceId, result.stripe_webhook_secret]);
          continue;
        }
        const key = newKey(kind);
        result[`${kind}_key`] = key;
        await tx.run('DELETE FROM api_keys WHERE workspace_id = $1 AND kind = $2', [workspaceId, kind]);
        await tx.run('INSERT INTO api_keys (key_hash, workspace_id, kind) VALUES ($1, $2, $3)', [hashKey(key), workspaceId, kind]);
      }
      return result;
    });
    // A cached lookup would keep an old key working in this process.
    this.owners.clear();
    settingsChanged(this.store);
    return rotated;
  }

  /** The workspace and kind of a presented key, or null. The final comparison is constant-time. */
  async authenticate(key: string): Promise<KeyOwner | null> {
    const hash = hashKey(key);
    const cached = this.owners.get(hash);
    if (cached) return cached;
    const rows = await this.store.all('SELECT key_hash, workspace_id, kind FROM api_keys WHERE key_hash = $1', [hash]);
    const row = rows[0] as { key_hash: string; workspace_id: string; kind: KeyKind } | undefined;
    if (!row || !timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) return null;
    const owner = { workspaceId: row.workspace_id, kind: row.kind };
    // Another node may rotate the key: a store shared by nodes is asked every time.
    if (!this.store.shared) this.owners.set(hash, owner);
    return owner;
  }
}
