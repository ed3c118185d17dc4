// Ingest: persons, events and page views. Each call is one unit of work (store/analytics.ts): a
// rejected batch stores nothing, an acknowledged one is stored (durable) before the answer.

import { invalidRequest } from '../errors.js';
import {
  type ChannelFields, type EventRecord, type PageviewRecord, RefusedValue, type Staged, type UnitOfWork, type VisitorLink,
} from '../store/analytics.js';
import { claimMessageIds, insertNewMessageIds, MessageIdSeen } from '../store/control/messages.js';
import type { Stores } from '../store/open.js';
import { propertyPaths } from '../store/property-paths.js';
import { stringifyWellFormed } from '../well-formed.js';
import { derivePageviewFields, isInternalNavigation, type PageviewFields } from './channels.js';
import { GroupCommit } from './group-commit.js';
import { newIds } from './ids.js';
import { type SuppressionCheck, suppressionCheck } from '../privacy/suppression.js';
import { type IdentityInput, resolveIdentities } from './identity.js';
import { CookielessVisitors, type RequestOrigin } from './cookieless.js';
import type { EventInput, EventResult, PageviewBody, PageviewInput, PersonInput } from './schemas.js';

/** The result of an event stored nowhere: one of its identifiers is suppressed. */
const SUPPRESSED_EVENT: EventResult = { event_id: null, person_id: null, duplicate: false, suppressed: true };

/** An internal navigation inherits the channel of a landing view at most this old. */
const SESSION_MS = 30 * 60_000;

/** Whether an input carries an identifier on the workspace's suppression list: it is then stored nowhere. */
function suppressed(check: SuppressionCheck, input: PersonInput | EventInput | PageviewInput): boolean {
  if (!check) return false;
  const visitor = input.visitor_id ?? ('tr_visitor_id' in input ? input.tr_visitor_id : undefined);
  if (check('visitor_id', visitor)) return true;
  if (!('email' in input || 'external_id' in input || 'user_id' in input)) return false;
  const person = input as PersonInput;
  return check('external_id', person.external_id ?? person.user_id) || check('email', person.email);
}

/** The results of `kept` inputs (in order) with `skipped` ones in their places. */
function merged<T>(keep: boolean[], kept: T[], skipped: T): T[] {
  let next = 0;
  return keep.map((k) => (k ? kept[next++]! : skipped));
}

function identityOf(input: PersonInput | EventInput, at: Date, event?: true): IdentityInput {
  return {
    external_id: input.external_id ?? input.user_id,
    email: input.email,
    visitor_id: input.visitor_id ?? input.tr_visitor_id,
    name: 'name' in input ? input.name : undefined,
    // Only a resolved person keeps traits; an unlinked visitor's are dropped by resolution.
    traits: input.traits,
    at,
    event,
  };
}


/**
 * An item of a request with what needs no database worked out before it waits for the write
 * lock (the write transactions run one at a time): its time (default: when the request arrived).
 */
interface Prepared<T> {
  input: T;
  ts: Date;
}
interface PreparedEvent extends Prepared<EventInput> {
  paths: string[];
  /**
   * The properties as the JSON text stored, every string well-formed: the appender does not check
   * JSON, and a lone surrogate would leave a document no filter can read.
   */
  properties: string;
}
interface PreparedPageview extends Prepared<PageviewInput> {
  fields: PageviewFields;
}

/**
 * A request that failed alone (a group's failure is retried apart, so only its own requests
 * fail) because the store refused one of its values is bad input: 400 invalid_request. Any other
 * failure stays what it is (a 500).
 */
function asRefusal(err: unknown): never {
  if (!(err instanceof RefusedValue)) throw err;
  throw invalidRequest([{ field: '', message: `the database refused a value of this request: ${err.reason}` }]);
}

const timeOf = (input: { timestamp?: string }, receivedAt: Date) => (input.timestamp ? new Date(input.timestamp) : receivedAt);

/**
 * Message ids are first inserted as new (most are); when one was seen before, that transaction is
 * rolled back and the write runs again with the exact claim, which skips the ids seen.
 */
async function withMessageIds<T>(write: (exactClaim: boolean) => Promise<T>): Promise<T> {
  try {
    return await write(false);
  } catch (err) {
    if (!(err instanceof MessageIdSeen)) throw err;
    return write(true);
  }
}

/** Which inputs to store: a message_id repeated within the batch or seen before is stored once. */
async function firstSightings(work: UnitOfWork, ws: string, inputs: { message_id?: string }[], exactClaim: boolean): Promise<boolean[]> {
  const firstOfBatch = new Map<string, number>();
  inputs.forEach((e, i) => { if (e.message_id !== undefined && !firstOfBatch.has(e.message_id)) firstOfBatch.set(e.message_id, i); });
  const messageIds = [...firstOfBatch.keys()];
  let fresh: Set<string> | null = null;
  if (exactClaim) fresh = await claimMessageIds(work.control, ws, messageIds);
  else await insertNewMessageIds(work.control, ws, messageIds);
  return inputs.map((e, i) => e.message_id === undefined || (firstOfBatch.get(e.message_id) === i && (fresh === null || fresh.has(e.message_id))));
}

/** Property paths per event name (a key built of both cost a string and its hash per path of every event). */
type KnownPaths = Map<string, Set<string>>;

/** Adds `path` under `name`; false when it was there. */
function addPath(paths: KnownPaths, name: string, path: string): boolean {
  let ofName = paths.get(name);
  if (!ofName) paths.set(name, (ofName = new Set()));
  if (ofName.has(path)) return false;
  ofName.add(path);
  return true;
}

/** Runs inside the unit of work that links the visitors: its writes are kept or dropped with them. */
export type LinkListener = (work: UnitOfWork, links: VisitorLink[]) => Promise<void>;

export class Ingest {
  private readonly eventWrites = new GroupCommit<PreparedEvent, EventResult>((ws, items) => this.writeEvents(ws, items));
  private readonly pageviewWrites = new GroupCommit<PreparedPageview, { pageview_id: string | null }>((ws, items) => this.writePageviews(ws, items));
  private readonly linkListeners: LinkListener[] = [];
  /** Property paths known per workspace and event name, so only new ones are written. */
  private readonly knownPaths = new Map<string, KnownPaths>();

  private readonly cookieless: CookielessVisitors;

  constructor(private readonly stores: Stores, private readonly clock: () => Date = () => new Date()) {
    this.cookieless = new CookielessVisitors(stores.control, clock);
  }

  /**
   * Calls `listener` with each change of visitor-to-person links (a visitor linked or moved), in
   * the unit of work that makes it. Deferred payment links hang off this.
   */
  onVisitorLinked(listener: LinkListener): void {
    this.linkListeners.push(listener);
  }

  async person(ws: string, input: PersonInput): Promise<{ person_id: string | null; suppressed?: true }> {
    const now = this.clock();
    if (suppressed(await suppressionCheck(this.stores.control, ws), input)) return { person_id: null, suppressed: true };
    const resolved = await this.stores.analytics.unit(async (work) => {
      const { resolved, links } = await resolveIdentities(this.stores.control, work, ws, [identityOf(input, now)], now);
      await this.notify(work, links);
      return resolved;
    }).catch(asRefusal);
    return { person_id: resolved[0]?.person_id ?? null };
  }

  /**
   * Stores a batch of events (with the batches of the workspace that are waiting, in one unit of
   * work). The inputs are within the limits of the schema (src/ingest/limits.ts): what
   * walks or serializes them here runs before the batch joins a group, so it can only fail itself.
   */
  async events(ws: string, all: EventInput[]): Promise<EventResult[]> {
    const receivedAt = this.clock();
    const check = await suppressionCheck(this.stores.control, ws);
    const keep = all.map((input) => !suppressed(check, input));
    const inputs = check ? all.filter((_, i) => keep[i]) : all;
    if (inputs.length === 0) return merged(keep, [], SUPPRESSED_EVENT);
    const items = inputs.map((input) => ({
      input,
      ts: timeOf(input, receivedAt),
      paths: propertyPaths(input.properties),
      properties: stringifyWellFormed(input.properties ?? {}),
    }));
    const results = await this.eventWrites.submit(ws, items).catch(asRefusal);
    return check ? merged(keep, results, SUPPRESSED_EVENT) : results;
  }

  private async writeEvents(ws: string, items: PreparedEvent[]): Promise<Staged<EventResult[]>> {
    const known = await this.pathsOf(ws);
    return withMessageIds((exactClaim) => this.stores.analytics.stage((work) => this.storeEvents(work, ws, items, this.clock(), known, exactClaim)));
  }

  /** Events inside their unit of work: dedupe, resolve, append, record new property paths. */
  private async storeEvents(work: UnitOfWork, ws: string, items: PreparedEvent[], now: Date, known: KnownPaths, exactClaim: boolean) {
    const inputs = items.map((item) => item.input);
    const kept = await firstSightings(work, ws, inputs, exactClaim);
    const stored = items.filter((_, i) => kept[i]);

    const { resolved, links } = await resolveIdentities(this.stores.control, work, ws, stored.map((e) => identityOf(e.input, e.ts, true)), now);
    await this.notify(work, links);
    const ids = newIds('evt', stored.length);
    const rows: EventRecord[] = [];
    const newPaths: { event_name: string; path: string }[] = [];
    const newNames: string[] = [];
    // A name is known once it is a key of `known`, with or without paths.
    const recorded: KnownPaths = new Map();
    stored.forEach(({ input: e, ts, paths, properties }, i) => {
      const who = resolved[i]!;
      rows.push({
        event_id: ids[i]!,
        message_id: e.message_id ?? null,
        event_name: e.event_name,
        ts,
        // Identified events keep their person; the others follow their visitor's link.
        person_key: who.identified ? who.person_key : null,
        visitor_key: who.visitor_key,
        properties,
        payload: e.properties,
      });
      const knownOfName = known.get(e.event_name);
      if (!knownOfName && !recorded.has(e.event_name)) {
        recorded.set(e.event_name, new Set());
        newNames.push(e.event_name);
      }
      for (const path of paths) {
        if (knownOfName?.has(path) || !addPath(recorded, e.event_name, path)) continue;
        newPaths.push({ event_name: e.event_name, path });
      }
    });
    await work.analytics.appendEvents(ws, rows, now);
    await work.analytics.recordPropertyPaths(ws, newPaths);
    await work.analytics.recordEventNames(ws, newNames);
    // Known once committed: a rolled-back or re-run transaction records them again.
    work.control.afterCommit(() => {
      for (const [name, paths] of recorded) {
        if (!known.has(name)) known.set(name, new Set());
        for (const path of paths) addPath(known, name, path);
      }
    });
    let next = 0;
    const results = inputs.map((_, i): EventResult => {
      if (!kept[i]) return { event_id: null, person_id: null, duplicate: true };
      const j = next++;
      return { event_id: rows[j]!.event_id, person_id: resolved[j]!.person_id, duplicate: false };
    });
    return results;
  }

  /** Stores a batch of page views (grouped with the workspace's waiting batches, like events). */
  /**
   * Stores page views; those of a suppressed visitor are acknowledged and counted apart. A
   * cookieless one's visitor is derived from `origin` (cookieless.ts).
   */
  async pageviews(ws: string, received: PageviewBody[], origin: RequestOrigin): Promise<{ stored: { pageview_id: string | null }[]; suppressed: number }> {
    const all = await Promise.all(received.map(async ({ cookieless, visitor_id, ...rest }): Promise<PageviewInput> =>
      ({ ...rest, visitor_id: cookieless || visitor_id === undefined ? await this.cookieless.visitorId(ws, origin) : visitor_id })));
    const receivedAt = this.clock();
    const check = await suppressionCheck(this.stores.control, ws);
    const inputs = check ? all.filter((input) => !suppressed(check, input)) : all;
    const items = inputs.map((input) => ({
      input,
      ts: timeOf(input, receivedAt),
      fields: derivePageviewFields(input.url, input.referrer ?? null),
    }));
    const stored = items.length === 0 ? [] : await this.pageviewWrites.submit(ws, items).catch(asRefusal);
    return { stored, suppressed: all.length - inputs.length };
  }

  /** Page views with a message_id (the Segment-compatible page calls) are stored once; a repeat answers no pageview_id. */
  private writePageviews(ws: string, all: PreparedPageview[]): Promise<Staged<{ pageview_id: string | null }[]>> {
    const now = this.clock();
    return withMessageIds((exactClaim) => this.stores.analytics.stage(async (work) => {
      const kept = await firstSightings(work, ws, all.map((item) => item.input), exactClaim);
      const items = all.filter((_, i) => kept[i]);
      if (items.length === 0) return kept.map(() => ({ pageview_id: null }));
      const { resolved } = await resolveIdentities(this.stores.control, work, ws, items.map(({ input, ts }) => ({ visitor_id: input.visitor_id, at: ts })), now);
      const keys = resolved.map((r) => r.visitor_key!);
      const ids = newIds('pv', items.length);
      const latest = await work.analytics.latestPageviews(ws, [...new Set(keys)]);
      const rows = items.map(({ input: p, ts, fields }, i): PageviewRecord => {
        let channel: ChannelFields = fields;
        if (isInternalNavigation(fields)) {
          const landing = latest.get(keys[i]!);
          const recent = landing && ts.getTime() - landing.ts.getTime() <= SESSION_MS && landing.ts.getTime() <= ts.getTime();
          channel = recent ? landing : { source: null, medium: null, campaign: null, channel: 'direct', channel_category: 'Direct' };
        }
        const row: PageviewRecord = {
          pageview_id: ids[i]!, visitor_key: keys[i]!, ts, url: p.url, referrer: p.referrer ?? null, title: p.title ?? null,
          host: fields.host, path: fields.path, referrer_host: fields.referrer_host,
          source: channel.source, medium: channel.medium, campaign: channel.campaign,
          channel: channel.channel, channel_category: channel.channel_category,
        };
        const previous = latest.get(keys[i]!);
        if (!previous || previous.ts.getTime() <= ts.getTime()) latest.set(keys[i]!, { ...channel, ts });
        return row;
      });
      await work.analytics.appendPageviews(ws, rows);
      let next = 0;
      return kept.map((k) => ({ pageview_id: k ? rows[next++]!.pageview_id : null }));
    }));
  }

  private async pathsOf(ws: string): Promise<KnownPaths> {
    let known = this.knownPaths.get(ws);
    if (!known) {
      known = new Map();
      const catalog = await this.stores.analytics.propertyCatalog(ws);
      for (const [name, paths] of catalog.events) for (const path of paths) addPath(known, name, path);
      for (const name of catalog.eventNames ?? []) if (!known.has(name)) known.set(name, new Set());
      this.knownPaths.set(ws, known);
    }
    return known;
  }

  private async notify(work: UnitOfWork, links: VisitorLink[]): Promise<void> {
    if (links.length === 0) return;
    for (const listener of this.linkListeners) await listener(work, links);
  }
}
