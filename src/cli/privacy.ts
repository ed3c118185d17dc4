// `privacy delete|suppress|unsuppress --workspace <ws> (--email … | --external-id … | --visitor-id …
// | --file ids.csv)`: a privacy request (docs/privacy.md) on the service's database or an
// analyst's DuckDB file, run to its end in this process.

import { readFileSync } from 'node:fs';
import { type PrivacyLogFields, PrivacyWorker } from '../privacy/worker.js';
import { submitRequest } from '../privacy/requests.js';
import { MAX_IDENTIFIERS, privacyRequestBody } from '../privacy/schema.js';
import { findRequest, IDENTIFIER_KINDS, type PrivacyType } from '../store/control/privacy.js';
import { stringOption, type Command, type Values } from './args.js';
import { CliError, oneLine, UsageError } from './errors.js';
import type { Output } from './output.js';
import { findWorkspace, openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const OPTIONS = {
  ...SERVICE_DATABASE_OPTIONS, workspace: { type: 'string' }, email: { type: 'string' }, 'external-id': { type: 'string' },
  'visitor-id': { type: 'string' }, file: { type: 'string' },
} as const;

const help = (type: string, what: string) => `usage: audiences privacy ${type} --workspace <workspace> (--email <e> | --external-id <id> | --visitor-id <id> | --file <ids.csv>) [--data <file.duckdb>] [--json]

${what} Runs the request to its end here and prints its counts; the audit trail
(GET /v1/privacy/requests) keeps the SHA-256 of each identifier, never the identifier.

${SERVICE_DATABASE_NOTE}

options:
  --workspace <workspace>   the workspace's id (ws_…) or name
  --email, --external-id, --visitor-id <value>   one identifier
  --file <ids.csv>          identifiers: a header naming columns among external_id, email,
                            visitor_id, then one value or none per cell (no quoting), at most ${MAX_IDENTIFIERS}
  ${SERVICE_DATABASE_HELP}
  --json                    print the request as GET /v1/privacy/requests/{id} answers it
  -h, --help                this help`;

/** Identifiers of a CSV file: a header of identifier kinds, then values (empty cells skipped). */
function identifiersOfFile(path: string, command: string): Record<string, string>[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`${path}: ${oneLine(err)}`);
  }
  const [header, ...rows] = text.split(/\r?\n/).filter((line) => line.trim() !== '');
  const kinds = (header ?? '').split(',').map((k) => k.trim());
  const unknown = kinds.find((k) => !(IDENTIFIER_KINDS as readonly string[]).includes(k));
  if (unknown !== undefined) throw new UsageError(`${path}: the header names "${unknown}"; columns are among ${IDENTIFIER_KINDS.join(', ')}`, command);
  return rows.flatMap((row) => row.split(',').flatMap((cell, i) => (cell.trim() === '' || kinds[i] === undefined ? [] : [{ [kinds[i]!]: cell.trim() }])));
}

function identifiersOf(values: Values, command: string): Record<string, string>[] {
  const file = stringOption(values, 'file');
  const given = (['email', 'external-id', 'visitor-id'] as const).flatMap((o) => {
    const v = stringOption(values, o);
    return v === undefined ? [] : [{ [o.replace('-', '_')]: v }];
  });
  if (file !== undefined) given.push(...identifiersOfFile(file, command));
  if (given.length === 0) throw new UsageError('give --email, --external-id, --visitor-id or --file', command);
  return given;
}

const run = (type: PrivacyType) => async (_: string[], values: Values, out: Output): Promise<number> => {
  const command = `privacy ${type}`;
  const workspace = stringOption(values, 'workspace');
  if (workspace === undefined) throw new UsageError('--workspace is required', command);
  const body = privacyRequestBody.safeParse({ type, identifiers: identifiersOf(values, command) });
  if (!body.success) {
    const issue = body.error.issues[0]!;
    throw new UsageError(`identifiers${issue.path.length > 1 ? ` #${String(issue.path[1])}` : ''}: ${issue.message}`, command);
  }
  const db = await openServiceDatabase(values, command, false, out.env);
  try {
    const ws = await findWorkspace(db, workspace);
    const request = await submitRequest(db.stores.control, ws.workspace_id, body.data, new Date());
    let failure: unknown = null;
    const log = { error: ({ err }: PrivacyLogFields) => { failure = err; }, warn: () => undefined };
    const worker = new PrivacyWorker(db.stores, { clock: () => new Date(), intervalMs: 60_000, log });
    await worker.kick(ws.workspace_id);
    const done = (await findRequest(db.stores.control, ws.workspace_id, request.request_id))!;
    if (done.status !== 'done') throw new CliError(`request ${done.request_id} is ${done.status}${failure ? `: ${oneLine(failure)}` : ''}; it resumes when the service starts`);
    if (values.json) {
      out.json({ id: done.request_id, type: done.type, status: done.status, counts: {
        persons: done.persons, visitors: done.visitors, events: done.events, pageviews: done.pageviews, customers: done.customers,
      } });
    } else {
      out.print(`${command} in workspace "${ws.name}" (${ws.workspace_id}), ${db.path}: ${done.request_id} done; `
        + `persons ${done.persons}, visitors ${done.visitors}, events ${done.events}, page views ${done.pageviews}, customers ${done.customers}`);
    }
    return 0;
  } finally {
    await db.close();
  }
};

const command = (type: PrivacyType, summary: string, what: string): Command => ({
  name: `privacy ${type}`, summary, help: help(type, what), options: OPTIONS, positionals: [], run: run(type),
});

export const privacyDelete = command('delete', 'forget people: persons, visitors, events, page views; payers de-identified',
  'Deletes the people the identifiers reach (decisions §12): their persons, visitors, events and page\nviews; their payment customers lose email and person (payments stay).');
export const privacySuppress = command('suppress', 'store nothing of these identifiers from now on',
  'Puts the identifiers on the workspace\'s suppression list: persons, events and page views carrying\none are acknowledged and stored nowhere.');
export const privacyUnsuppress = command('unsuppress', 'lift a suppression', 'Takes the identifiers off the workspace\'s suppression list.');
