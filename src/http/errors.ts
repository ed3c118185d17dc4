// The one place where errors become HTTP responses: `{ error, message, …details }`, and the
// Retry-After header of those that say when to retry.

import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, ERRORS, type ErrorCode, type FieldError, invalidRequest } from '../errors.js';
import { AnalyticsDelayed, DependencyUnavailable } from '../store/errors.js';

/** Seconds a client is told to wait after an outage answer: about the time a store takes to come back or to be reported down. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_MAX_PARAM_LENGTH: 'uri_too_long',
  FST_ERR_BAD_URL: 'invalid_request',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
};

const NAMES: Record<DependencyUnavailable['dependency'], string> = { postgresql: 'PostgreSQL', clickhouse: 'ClickHouse', duckdb: 'DuckDB' };

/** Translates whatever was thrown into an AppError; anything unexpected is `internal`. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof AnalyticsDelayed) return new AppError('analytics_delayed', undefined, { retry_after_seconds: OUTAGE_RETRY_AFTER_SECONDS });
  if (err instanceof DependencyUnavailable) {
    return new AppError('unavailable', `${NAMES[err.dependency]} is unavailable (${err.reason}); retry in ${OUTAGE_RETRY_AFTER_SECONDS} s`,
      { dependency: err.dependency, retry_after_seconds: OUTAGE_RETRY_AFTER_SECONDS });
  }
  const fastifyErr = err as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fastifyErr)) {
    const where = fastifyErr.validationContext;
    return invalidRequest(fastifyErr.validation.map((v): FieldError => ({
      // The type provider writes the root as '/' (RFC 6901 says ''); its paths are schema keys, never user keys.
      field: v.instancePath === '/' ? '' : v.instancePath,
      message: v.message ?? 'invalid',
      ...(where && where !== 'body' ? { in: where } : {}),
    })));
  }
  const mapped = fastifyErr.code ? FASTIFY_CODES[fastifyErr.code] : undefined;
  if (mapped) return new AppError(mapped);
  if (err instanceof SyntaxError && fastifyErr.statusCode === 400) return new AppError('invalid_json', `the request body is not valid JSON: ${err.message}`);
  if (fastifyErr.statusCode && fastifyErr.statusCode >= 400 && fastifyErr.statusCode < 500) {
    return new AppError('invalid_request', fastifyErr.message);
  }
  return new AppError('internal');
}

/** Errors the router raises before any route runs (Fastify's `frameworkErrors` option). */
export function frameworkErrors(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const appErr = toAppError(err);
  void reply.status(appErr.status).send({ error: appErr.code, message: appErr.message });
}

const CLIENT_ERRORS: Record<string, ErrorCode> = { ERR_HTTP_REQUEST_TIMEOUT: 'request_timeout', HPE_HEADER_OVERFLOW: 'headers_too_large' };

/**
 * Faults Node's HTTP parser meets before Fastify sees a request (headers or URL past the parser's
 * limit, a request too slow, bytes that are not HTTP): answered in the same `{ error, message }`
 * shape, then the connection is closed (Fastify's `clientErrorHandler` option).
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const code = CLIENT_ERRORS[err.code ?? ''] ?? 'invalid_request';
  const { status, message } = ERRORS[code];
  const body = JSON.stringify({ error: code, message: code === 'invalid_request' ? 'the request is not valid HTTP' : message });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const appErr = toAppError(err);
    if (appErr.code === 'internal') request.log.error({ err }, 'unhandled error');
    // A body's retry_after_seconds is also the Retry-After header (the rate limiter sets its own).
    const retryAfter = appErr.details?.retry_after_seconds;
    if (typeof retryAfter === 'number' && !reply.hasHeader('retry-after')) reply.header('retry-after', String(retryAfter));
    return reply.status(appErr.status).send({ error: appErr.code, message: appErr.message, ...appErr.details });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: 'not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` }));
}

export { ERRORS };
