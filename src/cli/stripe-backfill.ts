// `stripe backfill <workspace> --api-key rk_… [--since YYYY-MM-DD]`: the workspace's payment
// history from Stripe's list API, applied by the webhook's rules (attribution/backfill.ts).

import type { BackfillProgress } from '../attribution/backfill.js';
import { type Command, stringOption, type Values } from './args.js';
import { CliError, UsageError } from './errors.js';
import { fmt, type Output } from './output.js';
import { findWorkspace, openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const HELP = `usage: audiences stripe backfill <workspace> --api-key <rk_…> [--since YYYY-MM-DD] [--data <file.duckdb>] [--json]

Reads the workspace's customers, checkout sessions, payment intents, subscriptions, invoices,
charges and refunds from Stripe's list API and applies each as the notification of its current
state, by the same rules as the webhook: a payment both backfilled and notified counts once
(docs/payments.md, "Backfill"). Progress is stored after every page: a run interrupted (Ctrl-C, a
network failure, Stripe's rate limit past retries) resumes where it stopped when run again with the
same --since. STRIPE_API_BASE (e.g. http://127.0.0.1:12111) points it at another host.

${SERVICE_DATABASE_NOTE}

options:
  <workspace>               the workspace's id (ws_…) or name
  --api-key <key>           a restricted key (rk_…) with read access to those objects, or a secret key
                            (sk_…), of the workspace's payments mode (required)
  --since <YYYY-MM-DD>      only objects created on or after this day (UTC); default: all history
  ${SERVICE_DATABASE_HELP}
  --json                    print { workspace_id, complete, types: [{ object_type, read, ignored, done }] }
  -h, --help                this help`;

const COMMAND = 'stripe backfill';

function checkKey(values: Values): string {
  const key = stringOption(values, 'api-key');
  if (key === undefined) throw new UsageError('missing --api-key (a restricted key rk_… or a secret key sk_…)', COMMAND);
  if (!/^(rk|sk)_(live|test)_\S+$/.test(key)) throw new UsageError('--api-key must be a Stripe restricted key (rk_live_…, rk_test_…) or secret key (sk_…)', COMMAND);
  return key;
}

function checkSince(values: Values): string | null {
  const since = stringOption(values, 'since');
  if (since === undefined) return null;
  const day = /^\d{4}-\d{2}-\d{2}$/.test(since) ? new Date(`${since}T00:00:00Z`) : null;
  if (!day || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== since) throw new UsageError(`--since must be a date such as 2024-01-31, got "${since}"`, COMMAND);
  return since;
}

const line = (p: BackfillProgress) => `${p.objectType.padEnd(22)} ${fmt(p.read).padStart(9)} read${p.ignored > 0 ? ` (${fmt(p.ignored)} of the other mode, ignored)` : ''}${p.done ? '' : ', not finished'}`;

async function run([idOrName]: string[], values: Values, out: Output): Promise<number> {
  const [key, since] = [checkKey(values), checkSince(values)];
  const db = await openServiceDatabase(values, COMMAND, false, out.env);
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  try {
    const ws = await findWorkspace(db, idOrName!);
    const mode = (await db.workspaces.get(ws.workspace_id))!.payments_mode;
    if (!key.includes(`_${mode}_`)) {
      throw new CliError(`workspace "${ws.name}" counts Stripe's ${mode} mode, and this key is of the other mode (audiences workspace mode ${ws.name} ${mode === 'live' ? 'test' : 'live'} changes it)`);
    }
    // Loaded here: the stripe SDK is the CLI's largest module, and only this command needs it.
    const [{ Backfill, stripeClient }, { PaymentWebhook }, { Ingest }] = await Promise.all([
      import('../attribution/backfill.js'), import('../attribution/webhook.js'), import('../ingest/ingest.js'),
    ]);
    const webhook = new PaymentWebhook(db.stores, new Ingest(db.stores));
    const result = await new Backfill(webhook, db.stores.control).run(ws.workspace_id, stripeClient(key, out.env.STRIPE_API_BASE), {
      since, mode, signal: stop.signal, progress: (p) => out.progress(line(p)),
    });
    if (values.json) {
      out.json({ workspace_id: ws.workspace_id, complete: result.complete, types: result.types.map((t) => ({ object_type: t.objectType, read: t.read, ignored: t.ignored, done: t.done })) });
    } else {
      out.print(`workspace "${ws.name}" (${ws.workspace_id}): ${result.complete ? 'backfill complete' : 'backfill interrupted; run the same command again to resume'}`);
      for (const t of result.types) out.print(line(t));
    }
    return result.complete ? 0 : 1;
  } finally {
    process.off('SIGINT', interrupt);
    await db.close();
  }
}

export const stripeBackfill: Command = {
  name: COMMAND,
  summary: 'read a workspace\'s payment history from Stripe\'s list API (resumable)',
  help: HELP,
  options: { ...SERVICE_DATABASE_OPTIONS, 'api-key': { type: 'string' }, since: { type: 'string' } },
  positionals: ['workspace'],
  run,
};
