// The durable ingest log: records survive a restart until resolved, a torn tail is cut, a record
// that cannot be resolved is set aside with its error and the others still resolve.

import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IngestLog, type PendingRecord, type RecordHead } from '../src/ingest/log/ingest-log.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { resolved, workspaceState } from './support/segment.js';

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'ingest-log-test-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => { for (const dir of dirs) rmSync(dir, { recursive: true, force: true }); });

const head = (i: number) => ({ ws: 'ws_a', at: 1_000 + i, count: 1, events_only: true });
const record = (i: number) => Buffer.from(JSON.stringify({ event: `e${i}` }));
const eventOf = (r: PendingRecord) => (JSON.parse(r.payload.toString('utf8')) as { event: string }).event;
const segmentOf = (dir: string) => join(dir, readdirSync(dir).find((name) => name.endsWith('.log'))!);

describe('the log file', () => {
  it('replays every acknowledged record not yet resolved, in order, and cuts a torn tail', async () => {
    const dir = freshDir();
    const log = await IngestLog.open(dir);
    await Promise.all([0, 1, 2].map((i) => log.append(head(i), record(i))));
    log.settle(1);
    await log.close();
    const whole = statSync(segmentOf(dir)).size;
    appendFileSync(segmentOf(dir), Buffer.from([200, 1, 0, 0, 9, 9])); // a crash in the middle of a write
    const reopened = await IngestLog.open(dir);
    expect(reopened.peek(100).map(eventOf)).toEqual(['e1', 'e2']);
    expect(reopened.peek(100)[0]).toMatchObject(head(1));
    expect(statSync(segmentOf(dir)).size).toBe(whole);
    await reopened.append(head(3), record(3));
    expect(reopened.backlog(1_003)).toEqual({ events: 3, seconds: 0.002 });
    await reopened.close();
    const again = await IngestLog.open(dir);
    expect(again.peek(100)).toHaveLength(3);
    await again.close();
  });

  it('moves to a new segment past its size and deletes the segments wholly resolved', async () => {
    const dir = freshDir();
    const log = await IngestLog.open(dir, 200);
    for (let i = 0; i < 7; i++) await log.append(head(i), record(i)); // the 7th is written after the roll past the 6th
    expect(readdirSync(dir).filter((n) => n.endsWith('.log')).length).toBeGreaterThan(2);
    log.settle(6);
    await log.close();
    // Left: the segment the checkpoint is at the end of, and the one holding the 7th.
    expect(readdirSync(dir).filter((n) => n.endsWith('.log'))).toHaveLength(2);
    const reopened = await IngestLog.open(dir);
    expect(reopened.peek(100).map(eventOf)).toEqual(['e6']);
    await reopened.close();
  });

  it('reads back a record of its first format (one JSON text, its operations in it)', async () => {
    const dir = freshDir();
    const text = Buffer.from(JSON.stringify({ ...head(0), ops: [{ event: { event_name: 'e0', external_id: 'u' } }] }));
    const header = Buffer.alloc(8);
    header.writeUInt32LE(text.length, 0);
    header.writeUInt32LE(crc32(text), 4);
    writeFileSync(join(dir, '000000000001.log'), Buffer.concat([header, text]));
    const log = await IngestLog.open(dir);
    expect(log.peek(100)).toMatchObject([{ ...head(0), ops: [{ event: { event_name: 'e0' } }] }]);
    await log.append(head(1), record(1));
    expect(log.peek(100).map((r) => r.at)).toEqual([1_000, 1_001]);
    await log.close();
  });

  it('refuses a directory another live process holds', async () => {
    const dir = freshDir();
    appendFileSync(join(dir, 'lock'), String(process.ppid));
    await expect(IngestLog.open(dir)).rejects.toThrow(/in use by process/);
  });
});

describe.each(ENGINES)('%s: resolution', (engine) => {
  let t: TestApp;
  const dir = freshDir();
  beforeAll(async () => { t = await startTestApp({ engine, ingestLog: { dir } }); });
  afterEach(async () => { await t.freshWorkspace(); });
  afterAll(() => t.close());

  const logged = (ws: string, batch: unknown[]) => log().append(
    { ws, at: Date.now(), count: batch.length, events_only: true, kind: 'batch', received: Date.now() } as RecordHead,
    Buffer.from(JSON.stringify({ batch })),
  );
  const log = () => t.app.segment.log;
  const setAside = () => readFileSync(join(dir, 'poisoned.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);

  it('sets a record that cannot be stored aside with its error, and resolves the records around it (records of the first format)', async () => {
    const ws = t.ws.workspace_id;
    const before = t.app.segment.status().set_aside;
    // The first format: the operations, mapped, in the head.
    const mapped = (name: string, timestamp: string) => log().append(
      { ws, at: Date.now(), count: 1, events_only: true, ops: [{ event: { event_name: name, external_id: 'u', timestamp, message_id: name } }] } as RecordHead,
      Buffer.alloc(0),
    );
    await Promise.all([mapped('before', '2026-01-01T00:00:00Z'), mapped('poisoned', 'not a time'), mapped('after', '2026-01-02T00:00:00Z')]);
    await resolved(t);
    expect((await workspaceState(t, ws)).events.map((e) => e.event_name).sort()).toEqual(['after', 'before']);
    expect(setAside().at(-1)).toMatchObject({ ws, ops: [{ event: { event_name: 'poisoned' } }], error: expect.any(String) });
    expect(t.app.segment.status().set_aside).toBe(before + 1);
  });

  it('sets aside a message of a record that does not map, with its fault, and resolves the others of the record', async () => {
    const ws = t.ws.workspace_id;
    const before = t.app.segment.status().set_aside;
    const track = (event: string, timestamp: string) => ({ type: 'track', event, userId: 'u', timestamp, messageId: event });
    await logged(ws, [track('first', '2026-01-01T00:00:00Z'), track('unmapped', 'not a time'), track('last', '2026-01-02T00:00:00Z')]);
    await resolved(t);
    expect((await workspaceState(t, ws)).events.map((e) => e.event_name).sort()).toEqual(['first', 'last']);
    expect(setAside().at(-1)).toMatchObject({ ws, message: { event: 'unmapped' }, error: expect.stringMatching(/^\/batch\/1\/timestamp: /) });
    expect(t.app.segment.status().set_aside).toBe(before + 1);
  });
});
