// The durable ingest log: records survive a restart until resolved, a torn tail is cut, a record
// that cannot be resolved is set aside with its error and the others still resolve.

import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IngestLog } from '../src/ingest/log/ingest-log.js';
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
const record = (i: number) => JSON.stringify({ ...head(i), ops: [{ event: { event_name: `e${i}`, external_id: 'u' } }] });
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
    expect(reopened.peek(100).map((r) => JSON.parse(r.text).ops[0].event.event_name)).toEqual(['e1', 'e2']);
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
    for (let i = 0; i < 6; i++) await log.append(head(i), record(i));
    expect(readdirSync(dir).filter((n) => n.endsWith('.log')).length).toBeGreaterThan(2);
    log.settle(6);
    await log.close();
    // Left: the segment the checkpoint is in, and the empty one appends go to.
    expect(readdirSync(dir).filter((n) => n.endsWith('.log'))).toHaveLength(2);
    const reopened = await IngestLog.open(dir);
    expect(reopened.peek(100)).toEqual([]);
    await reopened.close();
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

  it('sets a record that cannot be stored aside with its error, and resolves the records around it', async () => {
    const ws = t.ws.workspace_id;
    const log = t.app.segment.log;
    const event = (name: string, timestamp: string) => JSON.stringify({ ws, at: Date.now(), count: 1, events_only: true, ops: [{ event: { event_name: name, external_id: 'u', timestamp, message_id: name } }] });
    await Promise.all([
      log.append({ ws, at: Date.now(), count: 1, events_only: true }, event('before', '2026-01-01T00:00:00Z')),
      log.append({ ws, at: Date.now(), count: 1, events_only: true }, event('poisoned', 'not a time')),
      log.append({ ws, at: Date.now(), count: 1, events_only: true }, event('after', '2026-01-02T00:00:00Z')),
    ]);
    await resolved(t);
    expect((await workspaceState(t, ws)).events.map((e) => e.event_name).sort()).toEqual(['after', 'before']);
    const setAside = readFileSync(join(dir, 'poisoned.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(setAside).toHaveLength(1);
    expect(setAside[0]).toMatchObject({ ws, ops: [{ event: { event_name: 'poisoned' } }], error: expect.any(String) });
    expect(t.app.segment.status().set_aside).toBe(1);
  });
});
