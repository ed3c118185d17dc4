// `keys rotate <workspace> [--kind …]`: a workspace's credentials replaced by fresh ones, printed once.

import { loadConfig } from '../config.js';
import { webhookUrl } from '../http/routes/workspace.js';
import { CREDENTIAL_KINDS, type CredentialKind } from '../store/control/workspaces.js';
import { type Command, stringOption, type Values } from './args.js';
import { CliError, UsageError } from './errors.js';
import type { Output } from './output.js';
import { findWorkspace, openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const HELP = `usage: audiences keys rotate <workspace> [--kind secret|publishable|webhook|all] [--data <file.duckdb>] [--json]

Replaces credentials of a workspace (its id, or its name) with fresh ones and prints them once.
The old one stops working at once: requests with it are refused (401) from the service's next
start, with no overlap (like rolling a key to expire now). Rotate the secret key when it has
leaked; the publishable key when the tracker's data-key must change; the webhook secret when the
payment processor's signing secret must change (it must then sign with the new one).

${SERVICE_DATABASE_NOTE}

options:
  <workspace>               the workspace's id (ws_…) or name
  --kind <kind>             secret (default), publishable, webhook (the payment webhook's
                            signing secret) or all three
  ${SERVICE_DATABASE_HELP}
  --json                    print { workspace_id, name, rotated, secret_key?, publishable_key?,
                            stripe_webhook_secret?, webhook_url? }: only the rotated ones
  -h, --help                this help`;

const KIND_CHOICES = [...CREDENTIAL_KINDS, 'all'] as const;

function kindsOption(values: Values): CredentialKind[] {
  const raw = stringOption(values, 'kind') ?? 'secret';
  if (raw === 'all') return [...CREDENTIAL_KINDS];
  if ((CREDENTIAL_KINDS as readonly string[]).includes(raw)) return [raw as CredentialKind];
  throw new UsageError(`--kind must be one of ${KIND_CHOICES.join(', ')}, got "${raw}"`, 'keys rotate');
}

async function rotate([idOrName]: string[], values: Values, out: Output): Promise<number> {
  const kinds = kindsOption(values);
  const db = await openServiceDatabase(values, 'keys rotate', false, out.env);
  try {
    const ws = await findWorkspace(db, idOrName!);
    const rotated = await db.workspaces.rotate(ws.workspace_id, kinds);
    if (!rotated) throw new CliError(`${db.path}: no workspace "${idOrName}"`);
    const url = kinds.includes('webhook') ? webhookUrl(loadConfig(out.env).publicUrl, ws.workspace_id) : undefined;
    if (values.json) {
      // Undefined fields (kinds not rotated) are left out of the JSON.
      out.json({
        workspace_id: ws.workspace_id, name: ws.name, rotated: kinds, secret_key: rotated.secret_key,
        publishable_key: rotated.publishable_key, stripe_webhook_secret: rotated.stripe_webhook_secret, webhook_url: url,
      });
      return 0;
    }
    const what = kinds.map((k) => (k === 'webhook' ? 'webhook secret' : `${k} key`)).join(', ');
    out.print(`rotated the ${what} of workspace "${ws.name}" (${ws.workspace_id}) in ${db.path}; the old ${kinds.length === 1 ? 'one no longer works' : 'ones no longer work'}. Shown only once:`);
    if (rotated.secret_key) out.print(`  secret key:            ${rotated.secret_key}`);
    if (rotated.publishable_key) out.print(`  publishable key:       ${rotated.publishable_key}`);
    if (rotated.stripe_webhook_secret) out.print(`  stripe webhook secret: ${rotated.stripe_webhook_secret}`);
    if (url) out.print(`  stripe webhook URL:    ${url}`);
    return 0;
  } finally {
    await db.close();
  }
}

export const keysRotate: Command = {
  name: 'keys rotate',
  summary: 'replace a workspace\'s secret, publishable or webhook key; prints the new one once',
  help: HELP,
  options: { ...SERVICE_DATABASE_OPTIONS, kind: { type: 'string' } },
  positionals: ['workspace'],
  run: rotate,
};
