// Segment's HTTP Tracking API (decisions §13): POST /v1/track, /identify, /page, /screen, /group,
// /alias and /batch (and /import, Segment's old name of batch), plus the one-letter paths Segment's
// browser library posts to (/v1/t, /v1/p, …, /v1/b). What the real clients send, read in their
// source: a JSON body whatever the Content-Type (the browser sends text/plain to skip a CORS
// preflight), gzip-compressed by RudderStack's node client, the write key as the HTTP Basic user
// name and/or `writeKey` in the body, `sentAt` per message or per batch.

import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, invalidRequest } from '../../errors.js';
import { messagesOf, type SegmentKind, typeOf } from '../../ingest/segment/body.js';
import { ScannedBody, scanSegmentBody } from '../../ingest/segment/scan.js';
import type { SegmentIngest } from '../../ingest/segment/service.js';
import type { Workspaces } from '../../store/control/workspaces.js';
import { jsonBodyParser } from '../json-body.js';

const gunzipAsync = promisify(gunzip);

/** Segment's limits: 32 KB a call, 500 KB a batch (of the JSON, after decompression). */
export const SEGMENT_LIMITS = { messageBytes: 32 * 1024, batchBytes: 500 * 1024 };

const ROUTES: [string, SegmentKind][] = [
  ['track', 'track'], ['identify', 'identify'], ['page', 'page'], ['screen', 'screen'], ['group', 'group'], ['alias', 'alias'],
  ['batch', 'batch'], ['import', 'batch'],
  ['t', 'track'], ['i', 'identify'], ['p', 'page'], ['s', 'screen'], ['g', 'group'], ['a', 'alias'], ['b', 'batch'],
];

const KIND_OF = new Map(ROUTES.map(([path, kind]) => [`/v1/${path}`, kind]));

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const BASIC = /^Basic\s+(\S+)\s*$/i;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The write key of the Authorization header: Basic's user name (the password is empty), or a Bearer token. */
function headerKey(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const basic = BASIC.exec(header);
  if (basic) return Buffer.from(basic[1]!, 'base64').toString('utf8').split(':')[0];
  return BEARER.exec(header)?.[1];
}

const PAGE_ONLY = 'a publishable key may send page calls only; use the secret key as the write key';

const tooLarge = (what: string, limit: number) => invalidRequest([{ field: '', message: `${what} is larger than ${limit / 1024} KB (Segment's limit)` }]);

/** The bytes of each request's body (decompressed), kept in the log as they came rather than serialized again. */
const bodyBytes = new WeakMap<FastifyRequest, Buffer>();

/** The body's bytes, decompressed when the client says gzip, within the batch limit. */
async function bodyOf(request: FastifyRequest, raw: Buffer): Promise<Buffer> {
  const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'gzip' && encoding !== 'identity') throw new AppError('unsupported_media_type', `Content-Encoding ${encoding} is not supported; send gzip or none`);
  const bytes = encoding === 'gzip'
    ? await gunzipAsync(raw, { maxOutputLength: SEGMENT_LIMITS.batchBytes + 1 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge('the decompressed body', SEGMENT_LIMITS.batchBytes);
      throw invalidRequest([{ field: '', message: 'the body is not valid gzip' }]);
    })
    : raw;
  if (bytes.length > SEGMENT_LIMITS.batchBytes) throw tooLarge('the body', SEGMENT_LIMITS.batchBytes);
  return bytes;
}

export const segmentAnswer = z.object({ success: z.literal(true) });

export async function segmentRoutes(app: FastifyInstance, { segment, workspaces }: { segment: SegmentIngest; workspaces: Workspaces }): Promise<void> {
  const parseJson = jsonBodyParser(app);
  app.removeAllContentTypeParsers();
  // Every Content-Type is read as JSON (the browser library sends text/plain; axios, form-urlencoded).
  // A body the scan vouches for is not parsed at all (scan.ts); any other is, as every JSON body.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, raw, done) => {
    bodyOf(request, raw as Buffer).then((bytes) => {
      const scanned = scanSegmentBody(bytes, KIND_OF.get(request.routeOptions.url ?? '') ?? 'batch');
      if (scanned) return done(null, scanned);
      bodyBytes.set(request, bytes);
      parseJson(request, bytes.toString('utf8'), done);
    }, (err: unknown) => done(err as Error));
  });

  // The header's key is checked before the body is read, so the rate limit counts per key.
  // Browsers post from the customer's site: any origin may read the answer. Their preflights
  // (OPTIONS *, one route for the whole app) are answered by the page-view routes' CORS, which
  // allows the Authorization and Content-Type headers.
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.origin) void reply.header('access-control-allow-origin', request.headers.origin).header('vary', 'Origin');
    const key = headerKey(request.headers.authorization);
    if (key !== undefined) await authenticate(request, key);
  });

  async function authenticate(request: FastifyRequest, key: string): Promise<void> {
    const owner = /^(sk|pk)_/.test(key) ? await workspaces.authenticate(key) : null;
    if (!owner) throw new AppError('unauthorized', 'a valid write key is required: your secret key as the HTTP Basic user name, or `writeKey` in the body');
    request.workspaceId = owner.workspaceId;
    request.apiKeyId = `${owner.workspaceId}:${owner.kind}`;
  }

  /** A body of track calls the scan vouched for: it holds no writeKey, and maps (the checks below, as the full path makes them). */
  async function acceptScanned(request: FastifyRequest, kind: SegmentKind, body: ScannedBody): Promise<void> {
    if (!request.workspaceId) throw new AppError('unauthorized', 'a write key is required: your secret key as the HTTP Basic user name, or `writeKey` in the body');
    if (request.apiKeyId.endsWith(':publishable')) throw new AppError('forbidden', PAGE_ONLY);
    await segment.acceptScanned(request.workspaceId, kind, body);
  }

  for (const [path, kind] of ROUTES) {
    app.post(`/v1/${path}`, {
      config: { limit: 'ingest' },
      bodyLimit: 1024 * 1024,
      schema: {
        tags: ['segment'],
        summary: kind === 'batch' ? `Segment's batch call (${path})` : `Segment's ${kind} call (${path})`,
        hide: path.length === 1 || path === 'import',
        response: { 200: segmentAnswer },
      },
    }, async (request) => {
      const body = request.body;
      if (body instanceof ScannedBody) {
        await acceptScanned(request, kind, body);
        return { success: true as const };
      }
      if (!isObject(body)) throw invalidRequest([{ field: '', message: 'the body must be a JSON object' }]);
      if (!request.workspaceId) {
        const key = typeof body.writeKey === 'string' ? body.writeKey : undefined;
        if (key === undefined) throw new AppError('unauthorized', 'a write key is required: your secret key as the HTTP Basic user name, or `writeKey` in the body');
        await authenticate(request, key);
      }
      const messages = messagesOf(kind, body);
      if (kind !== 'batch' && JSON.stringify(body).length > SEGMENT_LIMITS.messageBytes) throw tooLarge('the message', SEGMENT_LIMITS.messageBytes);
      if (request.apiKeyId.endsWith(':publishable') && messages.some((m) => typeOf(kind, m) !== 'page')) {
        throw new AppError('forbidden', PAGE_ONLY);
      }
      await segment.accept(request.workspaceId, { kind, body, messages, bytes: bodyBytes.get(request) });
      return { success: true as const };
    });
  }

  app.get('/v1/ingest/status', {
    config: { auth: 'secret' },
    schema: {
      tags: ['segment'],
      summary: 'This node\'s ingest log: messages acknowledged but not yet resolved, and how long the oldest has waited',
    },
  }, async (request) => segment.status(request.workspaceId));
}
