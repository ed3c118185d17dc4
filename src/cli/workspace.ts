// `workspace create <name>`, `workspace list` and `workspace mode <workspace> live|test`: the
// service's workspaces, in its database.

import { loadConfig } from '../config.js';
import { webhookUrl } from '../http/routes/workspace.js';
import type { Command, Values } from './args.js';
import { CliError, UsageError } from './errors.js';
import { PAYMENTS_MODES, type PaymentsMode } from '../store/control/workspaces.js';
import type { Output } from './output.js';
import { findWorkspace, openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const NAME_MAX = 100;

const CREATE_HELP = `usage: audiences workspace create <name> [--data <file.duckdb>] [--json]

Creates a workspace in the service's database and prints its secret key, publishable key and
payment webhook secret once (only their hashes are stored for the keys), with the webhook URL to
give the payment processor (from PUBLIC_URL, HOST and PORT, as the service computes it).
A name already used by a workspace is refused; a missing database file is created.

${SERVICE_DATABASE_NOTE}

options:
  ${SERVICE_DATABASE_HELP}
  --json                    print { workspace_id, name, secret_key, publishable_key,
                            stripe_webhook_secret, webhook_url, database, database_created }
  -h, --help                this help`;

const LIST_HELP = `usage: audiences workspace list [--data <file.duckdb>] [--json]

Lists the workspaces of the service's database, oldest first: id, name, creation time. No key
is shown (keys are stored hashed; rotate one to get a new value: audiences keys rotate).

${SERVICE_DATABASE_NOTE}

options:
  ${SERVICE_DATABASE_HELP}
  --json                    print { database, workspaces: [{ workspace_id, name, created_at }] }
  -h, --help                this help`;

const MODE_HELP = `usage: audiences workspace mode <workspace> live|test [--data <file.duckdb>] [--json]

Sets which of the payment processor's modes counts for a workspace (its id, or its name). In
live mode (the default) notifications with "livemode": false, those of Stripe's test mode, are
acknowledged and stored nowhere; in test mode the live ones are. Use test while trying the
integration with a Stripe sandbox or test keys, then set live. GET /v1/workspace shows the mode.

${SERVICE_DATABASE_NOTE}

options:
  <workspace>               the workspace's id (ws_…) or name
  live|test                 the mode to set
  ${SERVICE_DATABASE_HELP}
  --json                    print { workspace_id, name, payments_mode, previous }
  -h, --help                this help`;

function checkName(name: string): string {
  const trimmed = name.trim();
  const problem = trimmed === '' ? 'must not be empty'
    : trimmed.length > NAME_MAX ? `must be at most ${NAME_MAX} characters`
      : /\p{Cc}/u.test(trimmed) ? 'must not contain control characters'
        // `keys rotate` takes an id or a name: a name must never read as an id.
        : trimmed.startsWith('ws_') ? 'must not start with ws_ (workspace ids do)' : null;
  if (problem) throw new UsageError(`<name> ${problem}`, 'workspace create');
  return trimmed;
}

async function create([rawName]: string[], values: Values, out: Output): Promise<number> {
  const name = checkName(rawName!);
  const db = await openServiceDatabase(values, 'workspace create', true, out.env);
  try {
    const taken = (await db.workspaces.list()).find((w) => w.name === name);
    if (taken) throw new CliError(`${db.path}: a workspace is already named "${name}" (${taken.workspace_id})`);
    const ws = await db.workspaces.create(name);
    const url = webhookUrl(loadConfig(out.env).publicUrl, ws.workspace_id);
    if (values.json) {
      out.json({ ...ws, webhook_url: url, database: db.path, database_created: db.created });
      return 0;
    }
    out.print(`created workspace "${ws.name}" (${ws.workspace_id}) in ${db.created ? 'a new database ' : ''}${db.path}; these keys are shown only once:`);
    out.print(`  secret key:            ${ws.secret_key}`);
    out.print(`  publishable key:       ${ws.publishable_key}`);
    out.print(`  stripe webhook secret: ${ws.stripe_webhook_secret}`);
    out.print(`  stripe webhook URL:    ${url}`);
    return 0;
  } finally {
    await db.close();
  }
}

async function list(_: string[], values: Values, out: Output): Promise<number> {
  const db = await openServiceDatabase(values, 'workspace list', false, out.env);
  try {
    const rows = (await db.workspaces.list()).map((w) => ({ workspace_id: w.workspace_id, name: w.name, created_at: w.created_at.toISOString() }));
    if (values.json) {
      out.json({ database: db.path, workspaces: rows });
      return 0;
    }
    if (rows.length === 0) {
      out.print(`${db.path}: no workspaces (create one: audiences workspace create <name>)`);
      return 0;
    }
    const idWidth = Math.max('workspace_id'.length, ...rows.map((r) => r.workspace_id.length));
    const nameWidth = Math.max('name'.length, ...rows.map((r) => r.name.length));
    out.print(`${'workspace_id'.padEnd(idWidth)}  ${'name'.padEnd(nameWidth)}  created_at`);
    for (const r of rows) out.print(`${r.workspace_id.padEnd(idWidth)}  ${r.name.padEnd(nameWidth)}  ${r.created_at}`);
    return 0;
  } finally {
    await db.close();
  }
}

function checkMode(raw: string): PaymentsMode {
  const mode = PAYMENTS_MODES.find((m) => m === raw);
  if (!mode) throw new UsageError(`the mode must be one of ${PAYMENTS_MODES.join(', ')}, got "${raw}"`, 'workspace mode');
  return mode;
}

async function mode([idOrName, rawMode]: string[], values: Values, out: Output): Promise<number> {
  const wanted = checkMode(rawMode!);
  const db = await openServiceDatabase(values, 'workspace mode', false, out.env);
  try {
    const ws = await findWorkspace(db, idOrName!);
    const previous = await db.workspaces.setPaymentsMode(ws.workspace_id, wanted);
    if (!previous) throw new CliError(`${db.path}: no workspace "${idOrName}"`);
    if (values.json) {
      out.json({ workspace_id: ws.workspace_id, name: ws.name, payments_mode: wanted, previous });
      return 0;
    }
    const ignored = wanted === 'live' ? 'test-mode ("livemode": false)' : 'live ("livemode": true)';
    out.print(`workspace "${ws.name}" (${ws.workspace_id}) in ${db.path}: payments mode ${wanted}${previous === wanted ? ' (unchanged)' : ` (was ${previous})`}; `
      + `${ignored} notifications are acknowledged and ignored`);
    return 0;
  } finally {
    await db.close();
  }
}

export const workspaceCreate: Command = {
  name: 'workspace create',
  summary: 'create a workspace in the service\'s database; prints its keys once',
  help: CREATE_HELP,
  options: SERVICE_DATABASE_OPTIONS,
  positionals: ['name'],
  run: create,
};

export const workspaceList: Command = {
  name: 'workspace list',
  summary: 'list the service\'s workspaces (no keys)',
  help: LIST_HELP,
  options: SERVICE_DATABASE_OPTIONS,
  positionals: [],
  run: list,
};

export const workspaceMode: Command = {
  name: 'workspace mode',
  summary: 'set which payments mode counts for a workspace: live (default) or test',
  help: MODE_HELP,
  options: SERVICE_DATABASE_OPTIONS,
  positionals: ['workspace', 'mode'],
  run: mode,
};
