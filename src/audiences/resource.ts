// Saved audiences: create, read, update, delete. Criteria are validated like compile's, and a
// fault answers invalid_criteria with nothing saved.

import { randomBytes } from 'node:crypto';
import { isTimeWindowed, validateCriteria } from '../criteria/index.js';
import { AppError, type FieldError, invalidRequest } from '../errors.js';
import {
  type AudienceChanges, type AudienceRow, deleteAudience, getAudience, insertAudience, listAudiences, queueDeliveries, updateAudience,
} from '../store/control/audiences.js';
import type { AnalyticsStore } from '../store/analytics.js';
import type { Stores } from '../store/open.js';
import { refusedUrl } from './destinations/addresses.js';
import { completeDestinations } from './destinations/credentials.js';
import { type Destination, type DestinationInput, publicDestination } from './destinations/schema.js';
import { DEFAULT_REFRESH_EVERY, durationMs } from './duration.js';
import type { Audience, AudienceInput, AudiencePatch } from './schema.js';
import { type Split, splitFaults, storedSplits } from './splits.js';

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function storedDestinations(row: AudienceRow): Destination[] {
  return JSON.parse(row.destinations) as Destination[];
}

export function toAudience(row: AudienceRow): Audience {
  return {
    id: row.audience_id,
    name: row.name,
    criteria_json: JSON.parse(row.criteria),
    status: row.status,
    member_count: row.member_count,
    last_refreshed_at: iso(row.last_refreshed_at),
    next_refresh_at: row.next_refresh_at.toISOString(),
    is_time_windowed: row.is_time_windowed,
    refresh_every: row.refresh_every,
    destinations: storedDestinations(row).map(publicDestination),
    splits: storedSplits(row.splits),
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The criteria as stored (a parsed envelope) and whether they are windowed, or invalid_criteria. */
async function checkedCriteria(analytics: AnalyticsStore, ws: string, raw: unknown): Promise<{ criteria: string; is_time_windowed: boolean }> {
  const validation = validateCriteria(raw, await analytics.propertyCatalog(ws));
  if (!validation.ok) {
    const first = validation.errors[0]!;
    throw new AppError('invalid_criteria', first.message, { code: first.code, path: first.path, errors: validation.errors });
  }
  const envelope: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
  return { criteria: JSON.stringify(envelope), is_time_windowed: isTimeWindowed(validation.criteria.root) };
}

/** The body schema already checked the format; the cadence is checked here against its bounds. */
function cadence(refreshEvery: string): { refresh_every: string; refresh_every_ms: number } {
  const ms = durationMs(refreshEvery);
  if (ms === null) throw invalidRequest([{ field: '/refresh_every', message: 'expected a duration such as 15m, 1h or 1d' }]);
  return { refresh_every: refreshEvery, refresh_every_ms: ms };
}

/**
 * Webhook URLs must name public addresses (SSRF); invalid_request names each refused field by its
 * JSON Pointer. Names are resolved and checked again when delivering, on the address connected to.
 */
function checkAddresses(inputs: DestinationInput[]): void {
  const errors = inputs.flatMap((destination, i) => {
    const reason = destination.type === 'webhook' ? refusedUrl(destination.url) : null;
    return reason ? [{ field: `/destinations/${i}/url`, message: reason }] : [];
  });
  if (errors.length > 0) throw new AppError('invalid_request', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
}

/** Keeps the id of a destination whose configuration is unchanged, so its pending diffs still go out. */
function withIds(inputs: Omit<Destination, 'id'>[], previous: Destination[]): Destination[] {
  return inputs.map((input) => {
    const same = previous.find(({ id, ...config }) => JSON.stringify(config) === JSON.stringify(input));
    return { ...input, id: same?.id ?? newId('dst') } as Destination;
  });
}

/** The splits as stored: destinations listed, none for a holdout. */
const asSplits = (input: NonNullable<AudienceInput['splits']>): Split[] =>
  input.map((s) => ({ name: s.name, percent: s.percent, destinations: s.destinations ?? [] }));

/** invalid_request naming each fault of the splits beside the destinations they will have. */
function checkSplits(splits: Split[], destinationCount: number, given: { splits: boolean; destinations: boolean }): void {
  const errors: FieldError[] = splitFaults(splits, destinationCount, given);
  if (errors.length > 0) throw invalidRequest(errors);
}

export interface AudienceResourceOptions {
  /** ALLOW_PRIVATE_DESTINATIONS: no address check (local development and tests). */
  allowPrivateDestinations: boolean;
}

export class AudienceResource {
  constructor(
    private readonly stores: Stores,
    private readonly clock: () => Date,
    private readonly options: AudienceResourceOptions = { allowPrivateDestinations: false },
  ) {}

  async create(ws: string, input: AudienceInput): Promise<Audience> {
    this.checkDestinations(input.destinations);
    const splits = asSplits(input.splits ?? []);
    checkSplits(splits, input.destinations?.length ?? 0, { splits: true, destinations: input.destinations !== undefined });
    const now = this.clock();
    const row: AudienceRow = {
      workspace_id: ws,
      audience_id: newId('aud'),
      name: input.name,
      ...(await checkedCriteria(this.stores.analytics, ws, input.criteria_json)),
      ...cadence(input.refresh_every ?? DEFAULT_REFRESH_EVERY),
      destinations: JSON.stringify(withIds(completeDestinations(input.destinations ?? [], []), [])),
      splits: JSON.stringify(splits),
      split_salt: randomBytes(16).toString('hex'),
      status: 'pending',
      snapshot_id: null,
      member_count: null,
      last_refreshed_at: null,
      next_refresh_at: now,
      last_error: null,
      created_at: now,
      updated_at: now,
    };
    await insertAudience(this.stores.control, row);
    return toAudience(row);
  }

  async list(ws: string): Promise<Audience[]> {
    return (await listAudiences(this.stores.control, ws)).map(toAudience);
  }

  async row(ws: string, id: string): Promise<AudienceRow> {
    const row = await getAudience(this.stores.control, ws, id);
    if (!row) throw new AppError('not_found', `no audience ${id}`);
    return row;
  }

  async get(ws: string, id: string): Promise<Audience> {
    return toAudience(await this.row(ws, id));
  }

  /**
   * New criteria make the audience due at once and `pending` until that refresh (member_count stays
   * the last snapshot's, whose members are still served); a new cadence counts from the last refresh.
   */
  async update(ws: string, id: string, patch: AudiencePatch): Promise<Audience> {
    this.checkDestinations(patch.destinations);
    const row = await this.row(ws, id);
    const now = this.clock();
    const changes: AudienceChanges = { updated_at: now };
    if (patch.name !== undefined) changes.name = patch.name;
    if (patch.criteria_json !== undefined) {
      Object.assign(changes, await checkedCriteria(this.stores.analytics, ws, patch.criteria_json));
      changes.next_refresh_at = now;
      if (changes.criteria !== row.criteria) Object.assign(changes, { status: 'pending', last_error: null });
    }
    if (patch.refresh_every !== undefined) {
      Object.assign(changes, cadence(patch.refresh_every));
      if (!changes.next_refresh_at && row.last_refreshed_at) {
        changes.next_refresh_at = new Date(row.last_refreshed_at.getTime() + changes.refresh_every_ms!);
      }
    }
    const previous = storedDestinations(row);
    const destinations = patch.destinations === undefined ? previous : withIds(completeDestinations(patch.destinations, previous), previous);
    if (patch.destinations !== undefined) changes.destinations = JSON.stringify(destinations);
    if (patch.splits !== undefined || patch.destinations !== undefined) {
      const splits = patch.splits === undefined ? storedSplits(row.splits) : asSplits(patch.splits);
      checkSplits(splits, destinations.length, { splits: patch.splits !== undefined, destinations: patch.destinations !== undefined });
      changes.splits = JSON.stringify(splits);
    }
    if (!(await updateAudience(this.stores.control, ws, id, changes))) throw new AppError('not_found', `no audience ${id}`);
    // A destination added to an audience that has members gets them all at the next scheduler tick.
    const added = destinations.filter((d) => !previous.some((p) => p.id === d.id)).map((d) => d.id);
    await queueDeliveries(this.stores.control, ws, id, added, now);
    return this.get(ws, id);
  }

  /** Queues a delivery of the current snapshot to one destination (Send now). */
  async queueDelivery(ws: string, id: string, destinationId: string): Promise<void> {
    const row = await this.row(ws, id);
    if (!storedDestinations(row).some((d) => d.id === destinationId)) throw new AppError('not_found', `audience ${id} has no destination ${destinationId}`);
    if (row.snapshot_id === null) throw new AppError('conflict', 'the audience has no snapshot yet: it is delivered after its first refresh');
    await queueDeliveries(this.stores.control, ws, id, [destinationId], this.clock());
  }

  private checkDestinations(inputs: DestinationInput[] | undefined): void {
    if (inputs && !this.options.allowPrivateDestinations) checkAddresses(inputs);
  }

  /** Deletes the audience from both stores in one unit: nothing of it is kept when there is none. */
  async remove(ws: string, id: string): Promise<void> {
    await this.stores.analytics.unit(async (work) => {
      // Before its deliveries go: an engine finds the audience's work lists through them.
      await work.analytics.dropSnapshots(ws, id);
      if (!(await deleteAudience(work.control, ws, id))) throw new AppError('not_found', `no audience ${id}`);
    });
  }
}
