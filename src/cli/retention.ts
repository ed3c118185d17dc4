// `workspace retention <workspace> <days>|forever`: how long a workspace keeps events and page
// views (decisions §12); the service's daily job deletes older ones (docs/privacy.md).

import type { Command, Values } from './args.js';
import { CliError, UsageError } from './errors.js';
import type { Output } from './output.js';
import { findWorkspace, openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const MAX_DAYS = 36_500;

const HELP = `usage: audiences workspace retention <workspace> <days>|forever [--data <file.duckdb>] [--json]

Sets how many days a workspace (its id, or its name) keeps events and page views; the service
deletes older ones daily, and criteria windows (ever included) then read what is kept. forever
(the default) keeps them. PATCH /v1/workspace { "retention_days": … } does the same.

${SERVICE_DATABASE_NOTE}

options:
  <workspace>               the workspace's id (ws_…) or name
  <days>|forever            a whole number of days from 1 to ${MAX_DAYS}, or forever
  ${SERVICE_DATABASE_HELP}
  --json                    print { workspace_id, name, retention_days }
  -h, --help                this help`;

function checkDays(raw: string): number | null {
  if (raw === 'forever') return null;
  const days = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(days >= 1 && days <= MAX_DAYS)) throw new UsageError(`<days> must be a whole number from 1 to ${MAX_DAYS}, or forever; got "${raw}"`, 'workspace retention');
  return days;
}

async function retention([idOrName, rawDays]: string[], values: Values, out: Output): Promise<number> {
  const days = checkDays(rawDays!);
  const db = await openServiceDatabase(values, 'workspace retention', false, out.env);
  try {
    const ws = await findWorkspace(db, idOrName!);
    if (!(await db.workspaces.setRetention(ws.workspace_id, days))) throw new CliError(`${db.path}: no workspace "${idOrName}"`);
    if (values.json) out.json({ workspace_id: ws.workspace_id, name: ws.name, retention_days: days });
    else out.print(`workspace "${ws.name}" (${ws.workspace_id}) in ${db.path}: ${days === null ? 'events and page views kept forever' : `events and page views older than ${days} days deleted daily`}`);
    return 0;
  } finally {
    await db.close();
  }
}

export const workspaceRetention: Command = {
  name: 'workspace retention',
  summary: 'set how many days a workspace keeps events and page views (or forever)',
  help: HELP,
  options: SERVICE_DATABASE_OPTIONS,
  positionals: ['workspace', 'days'],
  run: retention,
};
