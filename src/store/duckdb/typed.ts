// Typed payload storage on DuckDB. Each (workspace, event name, path, JSON type) seen gets a slot:
// a column of the events table (`prop_s<n>` VARCHAR, `prop_n<n>` DOUBLE, `prop_b<n>` BOOLEAN)
// holding, on that name's rows, the value at that path when it is of that type, and null otherwise.
// Slot numbers are per event name, so one column serves different paths of different names;
// columns are added as the names need them. The JSON stays the source of truth: a predicate reads a
// slot only once it is ready, and reads the JSON for a type or a path without one.
//
// Ingest fills the slots of the rows it writes, creating the slots of types it sees first in the
// same transaction, so a name whose every row was written that way needs no backfill. A name with
// rows written otherwise (before this storage existed, or by an import) is `legacy`: its types are
// looked up once from its rows, and each of its slots is filled from the JSON (`fill`) before it is
// ready, in chunks of time, each its own short transaction.

import type { DuckDBConnection } from '@duckdb/node-api';
import { type ScalarKind, type TypedPaths, typedColumn } from '../../criteria/index.js';
import { pointer } from '../../criteria/errors.js';
import { wellFormedString } from '../../well-formed.js';
import { boolean, type ChunkColumn, double, text } from './chunks.js';
import type { Store } from './db.js';

const KINDS: readonly ScalarKind[] = ['string', 'number', 'boolean'];
/** Slots per event name and type: columns a row pays for at ingest, whatever its name uses. */
export const SLOTS_PER_NAME: Record<ScalarKind, number> = { string: 12, number: 12, boolean: 6 };
const SQL_TYPE: Record<ScalarKind, string> = { string: 'VARCHAR', number: 'DOUBLE', boolean: 'BOOLEAN' };
/** json_type's names of each kind's values. */
const JSON_TYPES: Record<ScalarKind, readonly string[]> = { string: ['VARCHAR'], number: ['BIGINT', 'UBIGINT', 'DOUBLE'], boolean: ['BOOLEAN'] };
/** Rows per backfill transaction: ingest waits for each one (bench/RESULTS.md, "Typed payload columns"). */
const FILL_CHUNK_ROWS = 250_000;
/** Rows filled from the JSON past which the fill ends with a checkpoint. */
const CHECKPOINT_AFTER_ROWS = 10_000;

interface Slot {
  slot: number;
  ready: boolean;
}

interface NameSlots {
  /** Rows of this name were written without their slots filled (see above). */
  legacy: boolean;
  /** The types of a legacy name's rows were looked up, and slots made for them. */
  discovered: boolean;
  paths: Map<string, Partial<Record<ScalarKind, Slot>>>;
  used: Record<ScalarKind, number>;
  /** What a printer reads: the ready slots (cached until a slot changes). */
  printed?: TypedPaths;
}

/** A typed column of the events table: its kind and slot number. */
interface Column {
  kind: ScalarKind;
  slot: number;
}

const emptyName = (legacy: boolean, discovered: boolean): NameSlots =>
  ({ legacy, discovered, paths: new Map(), used: { string: 0, number: 0, boolean: 0 } });

function kindOf(value: unknown): ScalarKind | null {
  switch (typeof value) {
    case 'string':
      return 'string';
    // A number JSON cannot hold is stored as null (stringify writes Infinity as null).
    case 'number':
      return Number.isFinite(value) ? 'number' : null;
    case 'boolean':
      return 'boolean';
    default:
      return null;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Calls `visit` with each scalar leaf of a payload (objects are walked, arrays are leaves), with its own stack. */
function visitLeaves(payload: unknown, visit: (path: string, kind: ScalarKind, value: string | number | boolean) => void): void {
  if (!isObject(payload)) return;
  const stack: [Record<string, unknown>, string][] = [[payload, '']];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [object, prefix] = top;
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      const value = object[key];
      const path = prefix + wellFormedString(key);
      if (isObject(value)) {
        stack.push([value, `${path}.`]);
        continue;
      }
      const kind = kindOf(value);
      // -0 is written 0 in the JSON text.
      if (kind) visit(path, kind, kind === 'string' ? wellFormedString(value as string) : value === 0 ? 0 : value as number | boolean);
    }
  }
}

/** What ingest appends after a row's own columns: the typed columns in table order, by row index. */
export interface TypedRows {
  columns: ChunkColumn<unknown>[];
}

const NO_TYPED_ROWS: TypedRows = { columns: [] };

/** The typed slots of one DuckDB database (its Store's `typed`), as committed (changes are applied once their transaction commits). */
export class TypedColumns {
  private columns: Column[] | null = null;
  private readonly workspaces = new Map<string, Map<string, NameSlots>>();
  private filling: Promise<void> | null = null;
  private again = false;
  /** The last backfill failure, if any (the next one starts over). */
  lastError: unknown = null;

  constructor(private readonly store: Store) {}

  /** The ready typed paths of each event name of `ws`, for the printer. */
  async printable(ws: string): Promise<(name: string) => TypedPaths | undefined> {
    const names = this.workspaces.get(ws) ?? await this.store.transaction((tx) => this.load(tx, ws));
    return (name) => {
      const slots = names.get(name);
      if (!slots) return undefined;
      slots.printed ??= readyPaths(slots);
      return slots.printed;
    };
  }

  /**
   * Inside the write transaction `tx`: the typed values of `events` (their payloads as sent), with
   * the slots and columns of types seen first created in `tx`.
   */
  async rows(tx: DuckDBConnection, ws: string, events: readonly { event_name: string; payload?: unknown }[]): Promise<TypedRows> {
    const names = await this.load(tx, ws);
    const columns = this.columns ?? await this.readColumns(tx);
    const position = new Map(columns.map((c, i) => [columnKey(c.kind, c.slot), i]));
    const draft = new Draft(names, columns);
    const values: (string | number | boolean | undefined)[][] = [];
    for (const event of events) {
      const row: (string | number | boolean | undefined)[] = [];
      const name = draft.name(event.event_name);
      visitLeaves(event.payload, (path, kind, value) => {
        const slot = name.paths.get(path)?.[kind]?.slot ?? draft.add(event.event_name, path, kind);
        if (slot === null) return;
        let at = position.get(columnKey(kind, slot));
        if (at === undefined) position.set(columnKey(kind, slot), (at = draft.column(kind, slot)));
        row[at] = value;
      });
      values.push(row);
    }
    await draft.write(tx, ws);
    if (draft.changed) {
      this.store.afterCommit(() => {
        this.columns = draft.columns;
        this.workspaces.set(ws, draft.names);
        if (draft.unready) this.kick();
      });
    }
    if (draft.columns.length === 0) return NO_TYPED_ROWS;
    // A column no row of the batch fills costs one validity copy per chunk.
    return {
      columns: draft.columns.map(({ kind }, j) => {
        const at = (i: number) => values[i]![j] ?? null;
        return kind === 'string' ? text((_: unknown, i: number) => at(i) as string | null)
          : kind === 'number' ? double((_: unknown, i: number) => at(i) as number | null)
            : boolean((_: unknown, i: number) => at(i) as boolean | null);
      }),
    };
  }

  /**
   * Inside an import's transaction, after it wrote events of `names` to `ws` without their slots:
   * those names become legacy and their slots unready until `fill` has run.
   */
  async imported(tx: DuckDBConnection, ws: string, names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    const column = JSON.stringify(names);
    await tx.run(`INSERT INTO event_slot_names (workspace_id, event_name, legacy, discovered)
      SELECT $1, unnest(CAST(CAST($2 AS JSON) AS VARCHAR[])), true, false
      ON CONFLICT DO UPDATE SET legacy = true, discovered = false`, [ws, column]);
    await tx.run(`UPDATE event_slots SET ready = false
      WHERE workspace_id = $1 AND event_name IN (SELECT unnest(CAST(CAST($2 AS JSON) AS VARCHAR[])))`, [ws, column]);
    this.store.afterCommit(() => this.workspaces.delete(ws));
  }

  /** Starts filling unready slots in the background, unless it is under way (then it runs again after). */
  kick(): void {
    if (this.filling) {
      this.again = true;
      return;
    }
    this.filling = this.fill().then(() => undefined, (err: unknown) => {
      if (!this.store.isClosed) this.lastError = err;
    }).finally(() => {
      this.filling = null;
      if (this.again && !this.store.isClosed) {
        this.again = false;
        this.kick();
      }
    });
  }

  /** Waits for the background fill, if any (tests, benchmarks, the command line). */
  async settled(): Promise<void> {
    while (this.filling) await this.filling;
  }

  /**
   * Looks up the types of legacy names not looked up yet and fills every unready slot (of `ws`, or
   * of all workspaces), until none is left. Returns the rows updated.
   */
  async fill(ws?: string): Promise<number> {
    let updated = 0;
    for (;;) {
      if (this.store.isClosed) return updated;
      const undiscovered = await this.store.query(`SELECT workspace_id, event_name FROM event_slot_names
        WHERE legacy AND NOT discovered${ws === undefined ? '' : ' AND workspace_id = $1'}`, ws === undefined ? [] : [ws]) as { workspace_id: string; event_name: string }[];
      for (const [w, names] of byWorkspace(undiscovered)) await this.discover(w, names.map((r) => r.event_name));
      const unready = await this.store.query(`SELECT workspace_id, event_name, list({'path': path, 'kind': kind, 'slot': slot}) AS slots
        FROM event_slots WHERE NOT ready${ws === undefined ? '' : ' AND workspace_id = $1'} GROUP BY ALL`, ws === undefined ? [] : [ws]) as
        { workspace_id: string; event_name: string; slots: SlotOf[] }[];
      // Updated rows are read through their update records until a checkpoint rewrites them (a
      // scan of a filled in-memory table is slower before it). A small fill skips it: the property
      // tests import hundreds of small datasets, and each paid a checkpoint.
      if (unready.length === 0) {
        if (updated >= CHECKPOINT_AFTER_ROWS) await this.store.checkpoint();
        return updated;
      }
      for (const [w, names] of byWorkspace(unready)) updated += await this.fillNames(w, names);
    }
  }

  /**
   * Makes slots for the types found on legacy names' rows (each path and type their rows hold):
   * one read of their paths, one of their types (a branch per name), one transaction.
   */
  private async discover(ws: string, names: readonly string[]): Promise<void> {
    const paths = new Map<string, string[]>();
    for (const { event_name: name, path } of await this.store.query(`SELECT event_name, path FROM event_properties
      WHERE workspace_id = $1 AND event_name IN (SELECT unnest(CAST(CAST($2 AS JSON) AS VARCHAR[]))) ORDER BY event_name, path`,
    [ws, JSON.stringify(names)]) as { event_name: string; path: string }[]) {
      const known = paths.get(name);
      if (known) known.push(path);
      else paths.set(name, [path]);
    }
    const found = new Map<string, Set<string>>(names.map((name) => [name, new Set()]));
    const typed = [...paths.keys()];
    for (let i = 0; i < typed.length; i += NAMES_PER_STATEMENT) {
      const params: string[] = [ws];
      const branches = typed.slice(i, i + NAMES_PER_STATEMENT).map((name) => {
        params.push(name, JSON.stringify(paths.get(name)!.map((p) => p.split('.').reduce(pointer, ''))));
        const at = params.length - 1;
        return `SELECT * FROM (SELECT DISTINCT CAST($${at} AS VARCHAR) AS event_name, json_type(properties, CAST(CAST($${at + 1} AS JSON) AS VARCHAR[])) AS types
          FROM events WHERE workspace_id = $1 AND event_name = $${at})`;
      });
      for (const { event_name: name, types } of await this.store.query(branches.join(' UNION ALL '), params) as { event_name: string; types: (string | null)[] }[]) {
        types.forEach((type, t) => {
          const kind = KINDS.find((k) => type !== null && JSON_TYPES[k].includes(type));
          if (kind) found.get(name)!.add(`${paths.get(name)![t]!}\0${kind}`);
        });
      }
    }
    await this.store.transaction(async (tx) => {
      const draft = new Draft(await this.load(tx, ws), this.columns ?? await this.readColumns(tx));
      for (const [name, keys] of found) {
        for (const key of [...keys].sort()) {
          const [path, kind] = key.split('\0') as [string, ScalarKind];
          draft.add(name, path, kind);
        }
        draft.discovered(name);
      }
      await draft.write(tx, ws);
      await tx.run(`UPDATE event_slot_names SET discovered = true
        WHERE workspace_id = $1 AND event_name IN (SELECT unnest(CAST(CAST($2 AS JSON) AS VARCHAR[])))`, [ws, JSON.stringify(names)]);
      this.store.afterCommit(() => {
        this.columns = draft.columns;
        this.workspaces.set(ws, draft.names);
      });
    });
  }

  /**
   * Fills the unready slots of names of `ws` from their rows' JSON, then marks them ready: a name of
   * more than FILL_CHUNK_ROWS rows in chunks of time, each its own transaction; smaller names
   * together, up to that many rows a transaction.
   */
  private async fillNames(ws: string, names: readonly { event_name: string; slots: SlotOf[] }[]): Promise<number> {
    const ranges = new Map((await this.store.query(`SELECT event_name, min(ts) AS lo, max(ts) AS hi, count(*) AS n FROM events
      WHERE workspace_id = $1 AND event_name IN (SELECT unnest(CAST(CAST($2 AS JSON) AS VARCHAR[]))) GROUP BY event_name`,
    [ws, JSON.stringify(names.map((n) => n.event_name))]) as { event_name: string; lo: Date; hi: Date; n: bigint }[]).map((r) => [r.event_name, r]));
    let updated = 0;
    let batch: { name: string; slots: SlotOf[] }[] = [];
    let batchRows = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const names = batch.splice(0);
      batchRows = 0;
      updated += await this.store.transaction(async (tx) => {
        let rows = 0;
        for (const { name, slots } of names) {
          rows += await this.fillRange(tx, ws, name, slots, null);
          await this.markReady(tx, ws, name, slots);
        }
        return rows;
      });
    };
    for (const { event_name: name, slots } of names) {
      if (this.store.isClosed) return updated;
      const range = ranges.get(name);
      const rows = Number(range?.n ?? 0);
      if (rows > FILL_CHUNK_ROWS) {
        updated += await this.fillChunks(ws, name, slots, range!);
        continue;
      }
      if (batchRows + rows > FILL_CHUNK_ROWS) await flush();
      batch.push({ name, slots });
      batchRows += rows;
    }
    await flush();
    return updated;
  }

  /** A big name's slots, in chunks of time, each its own transaction; the last marks them ready. */
  private async fillChunks(ws: string, name: string, slots: SlotOf[], range: { lo: Date; hi: Date; n: bigint }): Promise<number> {
    // Rows written from now on get these slots at ingest; the rows before are within this range.
    const chunks = Math.max(1, Math.ceil(Number(range.n) / FILL_CHUNK_ROWS));
    const [lo, hi] = [range.lo.getTime(), range.hi.getTime()];
    let updated = 0;
    for (let i = 0; i < chunks; i++) {
      if (this.store.isClosed) return updated;
      const from = new Date(lo + Math.floor(((hi - lo) * i) / chunks));
      const to = new Date(lo + Math.floor(((hi - lo) * (i + 1)) / chunks));
      const last = i === chunks - 1;
      updated += await this.store.transaction(async (tx) => {
        const rows = await this.fillRange(tx, ws, name, slots, { from, to, last });
        if (last) await this.markReady(tx, ws, name, slots);
        return rows;
      });
    }
    return updated;
  }

  /** Fills `slots` of the rows of `name` (within a time range, or all) from their JSON. */
  private async fillRange(tx: DuckDBConnection, ws: string, name: string, slots: SlotOf[], range: { from: Date; to: Date; last: boolean } | null): Promise<number> {
    const params: (string | number)[] = [ws, name];
    const sets = slots.map(({ path, kind, slot }) => {
      params.push(path.split('.').reduce(pointer, ''));
      const p = `$${params.length}`;
      const types = JSON_TYPES[kind].map((t) => `'${t}'`).join(', ');
      const value = kind === 'string' ? `json_extract_string(properties, ${p})`
        : kind === 'number' ? `TRY_CAST(CAST(json_extract(properties, ${p}) AS VARCHAR) AS DOUBLE)`
          : `CAST(json_extract(properties, ${p}) AS VARCHAR) = 'true'`;
      return `${typedColumn(kind, slot)} = CASE WHEN json_type(properties, ${p}) IN (${types}) THEN ${value} END`;
    });
    let within = '';
    if (range) {
      within = ` AND ts >= CAST($${params.length + 1} AS TIMESTAMP) AND ts ${range.last ? '<=' : '<'} CAST($${params.length + 2} AS TIMESTAMP)`;
      params.push(timestampText(range.from), timestampText(range.to));
    }
    const { rowsChanged } = await tx.run(`UPDATE events SET ${sets.join(', ')} WHERE workspace_id = $1 AND event_name = $2${within}`, params);
    return rowsChanged;
  }

  private async markReady(tx: DuckDBConnection, ws: string, name: string, slots: SlotOf[]): Promise<void> {
    await tx.run(`UPDATE event_slots SET ready = true WHERE workspace_id = $1 AND event_name = $2
      AND (path || chr(0) || kind) IN (SELECT unnest(CAST(CAST($3 AS JSON) AS VARCHAR[])))`,
    [ws, name, JSON.stringify(slots.map(({ path, kind }) => `${path}\0${kind}`))]);
    this.store.afterCommit(() => this.workspaces.delete(ws));
  }

  /** The slots of `ws`, read in the write transaction `tx` (so no commit lands between the read and the cache). */
  private async load(tx: DuckDBConnection, ws: string): Promise<Map<string, NameSlots>> {
    const cached = this.workspaces.get(ws);
    if (cached) return cached;
    const names = new Map<string, NameSlots>();
    const heads = (await tx.runAndReadAll('SELECT event_name, legacy, discovered FROM event_slot_names WHERE workspace_id = $1', [ws]))
      .getRowObjectsJS() as { event_name: string; legacy: boolean; discovered: boolean }[];
    for (const h of heads) names.set(h.event_name, emptyName(h.legacy, h.discovered));
    const rows = (await tx.runAndReadAll('SELECT event_name, path, kind, slot, ready FROM event_slots WHERE workspace_id = $1', [ws]))
      .getRowObjectsJS() as { event_name: string; path: string; kind: ScalarKind; slot: number; ready: boolean }[];
    for (const r of rows) {
      let name = names.get(r.event_name);
      if (!name) names.set(r.event_name, (name = emptyName(false, true)));
      const path = name.paths.get(r.path) ?? {};
      path[r.kind] = { slot: r.slot, ready: r.ready };
      name.paths.set(r.path, path);
      name.used[r.kind] = Math.max(name.used[r.kind], r.slot);
    }
    this.workspaces.set(ws, names);
    return names;
  }

  private async readColumns(tx: DuckDBConnection): Promise<Column[]> {
    const rows = (await tx.runAndReadAll(`SELECT column_name FROM duckdb_columns()
      WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'events' ORDER BY column_index`)).getRowObjectsJS();
    const columns: Column[] = [];
    for (const { column_name: c } of rows as { column_name: string }[]) {
      for (const kind of KINDS) {
        const prefix = typedColumn(kind, 1).slice(0, -1);
        const slot = Number(c.slice(prefix.length));
        if (c.startsWith(prefix) && Number.isSafeInteger(slot) && slot > 0 && typedColumn(kind, slot) === c) columns.push({ kind, slot });
      }
    }
    this.columns = columns;
    return columns;
  }
}

const KIND_INDEX = Object.fromEntries(KINDS.map((kind, i) => [kind, i])) as Record<ScalarKind, number>;
/** A column's key in a map: a number (a text key cost a string and its hash per payload value). */
const columnKey = (kind: ScalarKind, slot: number) => slot * KINDS.length + KIND_INDEX[kind];

function readyPaths(name: NameSlots): TypedPaths {
  const out: Record<string, Partial<Record<ScalarKind, number>>> = {};
  for (const [path, kinds] of name.paths) {
    for (const kind of KINDS) {
      const slot = kinds[kind];
      if (slot?.ready) (out[path] ??= {})[kind] = slot.slot;
    }
  }
  return out;
}

/** Legacy names whose types one statement looks up (a branch each). */
const NAMES_PER_STATEMENT = 64;

/** An unready slot: its path, kind and number. */
type SlotOf = { path: string; kind: ScalarKind; slot: number };

/** Rows grouped by their workspace, in order. */
function byWorkspace<R extends { workspace_id: string }>(rows: readonly R[]): Map<string, R[]> {
  const groups = new Map<string, R[]>();
  for (const row of rows) {
    const group = groups.get(row.workspace_id);
    if (group) group.push(row);
    else groups.set(row.workspace_id, [row]);
  }
  return groups;
}

const timestampText = (at: Date) => at.toISOString().replace('T', ' ').replace('Z', '');

/**
 * Slots and columns added by one transaction, on copies of the committed state (the copies become
 * the state once it commits; a rollback drops them).
 */
class Draft {
  readonly names: Map<string, NameSlots>;
  readonly columns: Column[];
  private readonly slots: { name: string; path: string; kind: ScalarKind; slot: number; ready: boolean }[] = [];
  private readonly newNames: string[] = [];
  private readonly newColumns: Column[] = [];
  private readonly copied = new Set<string>();

  constructor(committed: Map<string, NameSlots>, columns: Column[]) {
    this.names = new Map(committed);
    this.columns = [...columns];
  }

  get changed(): boolean {
    return this.slots.length > 0 || this.newNames.length > 0 || this.copied.size > 0;
  }

  get unready(): boolean {
    return this.slots.some((s) => !s.ready);
  }

  /** The slots of `name` (a name never stored before is new, not legacy). */
  name(name: string): NameSlots {
    const slots = this.names.get(name);
    if (slots) return slots;
    const fresh = emptyName(false, true);
    this.names.set(name, fresh);
    this.newNames.push(name);
    this.copied.add(name);
    return fresh;
  }

  /** The slot of `kind` for `path` on `event`, a new one if it has none; null when the name has used them all. */
  add(event: string, path: string, kind: ScalarKind): number | null {
    const own = this.own(event);
    const existing = own.paths.get(path)?.[kind];
    if (existing) return existing.slot;
    if (own.used[kind] >= SLOTS_PER_NAME[kind]) return null;
    const slot = ++own.used[kind];
    const ready = !own.legacy;
    const kinds = { ...own.paths.get(path), [kind]: { slot, ready } };
    own.paths.set(path, kinds);
    own.printed = undefined;
    this.slots.push({ name: event, path, kind, slot, ready });
    return slot;
  }

  /** The position of a new column of `kind` and `slot`, added at the end of the table. */
  column(kind: ScalarKind, slot: number): number {
    const existing = this.columns.findIndex((c) => c.kind === kind && c.slot === slot);
    if (existing >= 0) return existing;
    this.columns.push({ kind, slot });
    this.newColumns.push({ kind, slot });
    return this.columns.length - 1;
  }

  async write(tx: DuckDBConnection, ws: string): Promise<void> {
    for (const s of this.slots) this.column(s.kind, s.slot);
    // Column names are ours (typedColumn); slot numbers never come from a user.
    for (const { kind, slot } of this.newColumns) await tx.run(`ALTER TABLE events ADD COLUMN ${typedColumn(kind, slot)} ${SQL_TYPE[kind]}`);
    if (this.newNames.length > 0) {
      await tx.run(`INSERT INTO event_slot_names (workspace_id, event_name, legacy, discovered)
        SELECT $1, unnest(CAST(CAST($2 AS JSON) AS VARCHAR[])), false, true ON CONFLICT DO NOTHING`, [ws, JSON.stringify(this.newNames)]);
    }
    if (this.slots.length > 0) {
      await tx.run(`INSERT INTO event_slots (workspace_id, event_name, path, kind, slot, ready)
        SELECT $1, unnest(CAST(CAST($2 AS JSON) AS VARCHAR[])), unnest(CAST(CAST($3 AS JSON) AS VARCHAR[])),
          unnest(CAST(CAST($4 AS JSON) AS VARCHAR[])), unnest(CAST(CAST($5 AS JSON) AS INTEGER[])), unnest(CAST(CAST($6 AS JSON) AS BOOLEAN[]))`,
      [ws, ...(['name', 'path', 'kind', 'slot', 'ready'] as const).map((k) => JSON.stringify(this.slots.map((s) => s[k])))]);
    }
  }

  /** A legacy name's types were looked up. */
  discovered(event: string): void {
    this.own(event).discovered = true;
  }

  /** `event`'s slots as this draft's own copy (the committed record stays as it is until commit). */
  private own(event: string): NameSlots {
    const name = this.name(event);
    if (this.copied.has(event)) return name;
    const copy: NameSlots = { ...name, paths: new Map(name.paths), used: { ...name.used }, printed: undefined };
    this.names.set(event, copy);
    this.copied.add(event);
    return copy;
  }
}

/** Every scalar payload path of `payload` with its kind (tests compare the stored slots with it). */
export function scalarLeaves(payload: unknown): { path: string; kind: ScalarKind }[] {
  const out: { path: string; kind: ScalarKind }[] = [];
  visitLeaves(payload, (path, kind) => out.push({ path, kind }));
  return out;
}
