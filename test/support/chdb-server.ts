// ClickHouse's HTTP interface over the embedded chDB, for tests only: nothing in src/ imports it and
// it is never shipped. chDB runs inside the process that opens it (one data directory per process),
// so API processes that must share one analytical store, as the nodes of a multi-node test do,
// cannot each open it: this process holds the one engine, and they reach it with @clickhouse/client
// at CLICKHOUSE_URL exactly as they would reach a ClickHouse server. The engine is real; only the
// HTTP layer is this file.
//
//   node --import tsx test/support/chdb-server.ts <data directory> [--port N]
//
// It listens on 127.0.0.1 (port 0: one the system picks) and prints `listening on <url>`.
// `startChdbServer` runs it as a child process for a test.
//
// What the HTTP interface does here (the parts @clickhouse/client uses):
// - POST / with the statement in the body, or in the `query` URL parameter with the body appended
//   after a newline (an INSERT's data); GET / with `query` too; GET /ping and GET / answer `Ok.`.
// - `database` (or X-ClickHouse-Database), `query_id` (echoed in X-ClickHouse-Query-Id, else a new
//   one), `default_format` (or X-ClickHouse-Format; TabSeparated unless given), `param_<name>`
//   query parameters bound by the engine from their text as a server binds them, and every other
//   URL parameter as a setting of that request alone (`wait_end_of_query` is what this server
//   always does: the answer is complete before it is sent). JSON formats quote 64-bit integers, as
//   a server's default does (chDB's does not).
// - The answer: the engine's bytes in the statement's format, X-ClickHouse-Summary (chDB reports
//   the result's rows and bytes only: they stand for the read ones too, and for the written ones of
//   an INSERT; an async insert reports none). An error: HTTP 500 whatever the code (a server
//   answers some with 4xx), the engine's `Code: N. DB::Exception: … (NAME)` text and
//   X-ClickHouse-Exception-Code, from which the client raises a ClickHouseError with that code.
// - An INSERT without data stores no rows and succeeds, as over a server's HTTP interface.
// - gzip, deflate and br request bodies (Content-Encoding), and answers compressed with them when
//   the request sets enable_http_compression=1 and accepts one (Accept-Encoding).
// - Statements run one at a time on one chDB session, in arrival order: a session's USE, settings
//   and parameters are its state, so a request's are set before its statement and put back after.
//   A request whose client has gone away before its turn is not run.
// Not supported: sessions (session_id), ClickHouse's own compression (compress/decompress), roles,
// multipart query parameters, progress and X-ClickHouse-Format headers; insert data must be text (chDB takes it inside the
// statement's text) and have no empty line before its end (chDB's parser ends inline data there:
// refused rather than half stored). Credentials are accepted and not checked (loopback only).
// chDB runs several statements in one request where a server refuses them, and a SET inside a
// statement stays on the session.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';
import { CHDB_ENGINE_ARGS } from '../../src/store/clickhouse/embedded.js';

interface ChdbResult {
  readonly rowsRead: number;
  readonly bytesRead: number;
  bytes(): Uint8Array;
  text(): string;
}

interface ChdbSession {
  queryAsync(sql: string, options: { format: string }): Promise<ChdbResult>;
  close(): void;
}

interface ChdbModule {
  Session: new (path: string, options: { connectionArgs: string[] }) => ChdbSession;
  drainPending(): Promise<void>;
}

/** URL parameters of the HTTP layer, not settings. */
const HTTP_PARAMETERS = new Set(['query', 'database', 'default_format', 'query_id', 'user', 'password', 'quota_key', 'wait_end_of_query', 'buffer_size']);
/** URL parameters asking for what this server does not do. */
const UNSUPPORTED_PARAMETERS = new Set(['session_id', 'session_timeout', 'session_check', 'compress', 'decompress', 'role', 'readonly']);

const CODECS = {
  gzip: { decode: zlib.createGunzip, encode: zlib.createGzip },
  deflate: { decode: zlib.createInflate, encode: zlib.createDeflate },
  br: { decode: zlib.createBrotliDecompress, encode: zlib.createBrotliCompress },
} as const;
type Codec = keyof typeof CODECS;
const isCodec = (name: string): name is Codec => Object.hasOwn(CODECS, name);

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const sqlString = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const sqlIdentifier = (name: string) => `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;

/** An error answered as the server would: its code in the header, its text in the body. */
class ClickHouseFailure extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }

  /** An engine error keeps its text (it already reads `Code: N. DB::Exception: …`). */
  static of(err: unknown): ClickHouseFailure {
    if (err instanceof ClickHouseFailure) return err;
    const message = err instanceof Error ? err.message : String(err);
    const code = /^Code: (\d+)\./.exec(message)?.[1];
    return code === undefined ? ClickHouseFailure.named(1002, 'UNKNOWN_EXCEPTION', message) : new ClickHouseFailure(Number(code), message);
  }

  static named(code: number, name: string, message: string): ClickHouseFailure {
    return new ClickHouseFailure(code, `Code: ${code}. DB::Exception: ${message}. (${name})`);
  }
}

const notSupported = (what: string) => ClickHouseFailure.named(48, 'NOT_IMPLEMENTED', `chdb-server (a test server over chDB) does not support ${what}`);

interface Request {
  statement: string;
  database: string;
  format: string;
  queryId: string;
  settings: Map<string, string>;
  params: Map<string, string>;
  /** The codec of the answer, when the request asked for a compressed one. */
  answerCodec: Codec | undefined;
  isInsert: boolean;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return (await buffer(req)).toString('utf8');
  if (!isCodec(encoding)) throw notSupported(`Content-Encoding ${encoding}`);
  return (await buffer(req.pipe(CODECS[encoding].decode()))).toString('utf8');
}

function parseRequest(req: IncomingMessage, url: URL, body: string): Request {
  const settings = new Map<string, string>();
  const params = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (UNSUPPORTED_PARAMETERS.has(key)) throw notSupported(`the ${key} parameter`);
    if (key.startsWith('param_')) params.set(key.slice('param_'.length), value);
    else if (!HTTP_PARAMETERS.has(key)) settings.set(key, value);
  }
  for (const name of [...settings.keys(), ...params.keys()]) {
    if (!NAME.test(name)) throw ClickHouseFailure.named(115, 'UNKNOWN_SETTING', `Invalid setting or parameter name ${JSON.stringify(name)}`);
  }
  const query = url.searchParams.get('query');
  // As a server reads it: the URL's part of the statement, then the body (an INSERT's data).
  const statement = query === null ? body : body === '' ? query : `${query}\n${body}`;
  if (statement.trim() === '') throw ClickHouseFailure.named(62, 'SYNTAX_ERROR', 'Empty query');
  const isInsert = /^\s*INSERT\b/i.test(statement);
  // An insert without data stores no rows over HTTP; chDB, like clickhouse-client, refuses it unless told.
  if (query !== null && !settings.has('throw_if_no_data_to_insert')) settings.set('throw_if_no_data_to_insert', '0');
  if (query !== null && isInsert && /\n\n/.test(`\n${body.trimEnd()}`)) {
    throw notSupported('insert data with an empty line before its end (chDB would store the rows before it and fail on the rest)');
  }
  const header = (name: string) => {
    const value = req.headers[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const compress = ['1', 'true'].includes(settings.get('enable_http_compression') ?? '');
  const accepted = (header('accept-encoding') ?? '').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  return {
    statement,
    database: url.searchParams.get('database') ?? header('x-clickhouse-database') ?? 'default',
    format: url.searchParams.get('default_format') ?? header('x-clickhouse-format') ?? 'TabSeparated',
    queryId: url.searchParams.get('query_id') || randomUUID(),
    settings,
    params,
    answerCodec: compress ? accepted.find(isCodec) : undefined,
    isInsert,
  };
}

interface Answer {
  bytes: Uint8Array;
  summary: Record<string, string>;
}

/** The one chDB session and the statements queued for it. */
class Engine {
  private tail: Promise<unknown> = Promise.resolve();
  /** What each setting is put back to after a request that set it: its value at start if chDB changed it, else its default. */
  private readonly initial = new Map<string, string>();

  private constructor(private readonly chdb: ChdbModule, private readonly session: ChdbSession) {}

  static async open(dataPath: string): Promise<Engine> {
    const chdb = (await import('chdb' as string)) as ChdbModule;
    // A server's default where chDB's differs in what clients read: 64-bit integers quoted in JSON.
    const engine = new Engine(chdb, new chdb.Session(dataPath, { connectionArgs: ['--output_format_json_quote_64bit_integers=1', ...CHDB_ENGINE_ARGS] }));
    const settings = await engine.session.queryAsync('SELECT name, changed, value FROM system.settings', { format: 'JSONEachRow' });
    for (const line of settings.text().split('\n')) {
      if (line === '') continue;
      const { name, changed, value } = JSON.parse(line) as { name: string; changed: number; value: string };
      engine.initial.set(name, changed ? sqlString(value) : 'DEFAULT');
    }
    return engine;
  }

  /** Runs `work` after every statement queued before it. */
  serially<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.tail.then(work);
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  async run(request: Request): Promise<Answer> {
    const started = performance.now();
    const assignments = [
      ...[...request.settings].map(([name, value]) => `${name} = ${sqlString(value)}`),
      ...[...request.params].map(([name, value]) => `param_${name} = ${sqlString(value)}`),
    ];
    const prelude = `USE ${sqlIdentifier(request.database)}; ${assignments.length === 0 ? '' : `SET ${assignments.join(', ')}; `}`;
    try {
      const result = await this.session.queryAsync(`${prelude}${request.statement}`, { format: request.format });
      return { bytes: result.bytes(), summary: summary(request, result.rowsRead, result.bytesRead, started) };
    } finally {
      await this.restore(request);
    }
  }

  /**
   * Puts the request's settings back, and makes its parameters fail in later statements that name
   * them without sending them: a parameter cannot be unset, and a raw tab is a value no type
   * parses whole (a server answers 456, this 457 or the type's parse error).
   */
  private async restore(request: Request): Promise<void> {
    const assignments = [
      ...[...request.settings.keys()].filter((name) => this.initial.has(name)).map((name) => `${name} = ${this.initial.get(name)}`),
      ...[...request.params.keys()].map((name) => `param_${name} = '\t'`),
    ];
    if (assignments.length > 0) await this.session.queryAsync(`SET ${assignments.join(', ')}`, { format: 'TabSeparated' });
  }

  async close(): Promise<void> {
    await this.tail;
    this.session.close();
    await this.chdb.drainPending();
  }
}

function summary(request: Request, rows: number, bytes: number, started: number): Record<string, string> {
  const [read, written] = request.isInsert ? [0, 1] : [1, 0];
  return {
    read_rows: String(rows * read), read_bytes: String(bytes * read),
    written_rows: String(rows * written), written_bytes: String(bytes * written),
    total_rows_to_read: '0', result_rows: String(rows * read), result_bytes: String(bytes * read),
    elapsed_ns: String(Math.round((performance.now() - started) * 1e6)),
  };
}

function answerError(res: ServerResponse, err: unknown, queryId?: string): void {
  const failure = ClickHouseFailure.of(err);
  if (res.headersSent) return void res.destroy();
  res.writeHead(500, {
    'Content-Type': 'text/plain; charset=UTF-8',
    'X-ClickHouse-Exception-Code': String(failure.code),
    ...(queryId === undefined ? {} : { 'X-ClickHouse-Query-Id': queryId }),
  });
  res.end(`${failure.message}\n`);
}

async function handle(engine: Engine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (url.pathname === '/ping' || (url.pathname === '/' && req.method !== 'POST' && !url.searchParams.has('query'))) {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' });
    return void res.end('Ok.\n');
  }
  if (url.pathname !== '/') {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8' });
    return void res.end(`There is no handle ${url.pathname}\n`);
  }
  let request: Request | undefined;
  try {
    request = parseRequest(req, url, req.method === 'POST' ? await readBody(req) : '');
    const current = request;
    const answer = await engine.serially(() => (req.socket.destroyed ? Promise.resolve(null) : engine.run(current)));
    if (answer === null) return;
    res.writeHead(200, {
      'Content-Type': 'text/plain; charset=UTF-8',
      'X-ClickHouse-Query-Id': request.queryId,
      'X-ClickHouse-Summary': JSON.stringify(answer.summary),
      ...(request.answerCodec === undefined ? {} : { 'Content-Encoding': request.answerCodec }),
    });
    if (request.answerCodec === undefined) return void res.end(answer.bytes);
    Readable.from([answer.bytes]).pipe(CODECS[request.answerCodec].encode()).pipe(res);
  } catch (err) {
    answerError(res, err, request?.queryId);
  }
}

async function serve(dataPath: string, port: number, exitWithParent: boolean): Promise<void> {
  const engine = await Engine.open(dataPath);
  const server = createServer((req, res) => void handle(engine, req, res));
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', done));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('chdb-server: no TCP address');
  process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    server.close();
    await engine.close();
    server.closeAllConnections();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  // A test that dies leaves no server behind: its end of our stdin closes.
  if (exitWithParent) process.stdin.on('end', () => void stop()).resume();
}

export interface ChdbServer {
  /** The CLICKHOUSE_URL of the server. */
  url: string;
  /** Its process (the benchmarks read its CPU time). */
  pid: number;
  /** Stops the server (its engine closed) and waits until the process has exited. */
  stop(): Promise<void>;
}

const exited = (child: ChildProcess) => new Promise<void>((done) => {
  if (child.exitCode !== null || child.signalCode !== null) done();
  else child.once('exit', () => done());
});

/** Runs the server over a chDB at `dataPath` in a child process, on `port` if given (a restart at the same URL); resolves once it listens. */
export async function startChdbServer(dataPath: string, port?: number): Promise<ChdbServer> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const args = [fileURLToPath(import.meta.url), resolve(dataPath), '--exit-with-parent', ...(port === undefined ? [] : ['--port', String(port)])];
  const child = spawn(process.execPath, ['--import', tsx, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((done, fail) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const found = /^listening on (\S+)$/.exec(line);
      if (found) done(found[1]!);
    });
    child.once('exit', (code, signal) => fail(new Error(`chdb-server exited (${signal ?? code}) before it listened`)));
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited(child);
      clearTimeout(timer);
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const portAt = args.indexOf('--port');
  const dataPath = args.find((arg, i) => !arg.startsWith('--') && (portAt === -1 || i !== portAt + 1));
  if (dataPath === undefined) {
    console.error('usage: node --import tsx test/support/chdb-server.ts <data directory> [--port N]');
    process.exit(2);
  }
  await serve(dataPath, portAt === -1 ? 0 : Number(args[portAt + 1]), args.includes('--exit-with-parent'));
}
