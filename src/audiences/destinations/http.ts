// The HTTP client of deliveries. Two guarantees fetch does not give us:
// - the address policy applies to the IP really connected to: names are resolved in the socket's
//   lookup hook and every address they resolve to is checked (a DNS answer cannot swap in a private
//   address after the URL was saved); IP literals, which sockets connect to without a lookup, are
//   checked before connecting. Redirects are not followed.
// - one deadline covers the whole exchange (connect, headers, body), so a receiver that accepts and
//   never answers, or stalls its body, costs one timeout per attempt.
// A signal aborts the exchange at once (the service is stopping).

import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { ipLiteral, nonPublic } from './addresses.js';
import type { HttpRequest, HttpResponse } from './driver.js';

/** At most this much of an answer is read; drivers only need small JSON answers. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** A request that got no answer; `retryable` is false when the address policy refused it. */
export class RequestFailed extends Error {
  constructor(message: string, readonly retryable: boolean) {
    super(message);
  }
}

const notAllowed = (reason: string) => new RequestFailed(`address not allowed: ${reason}`, false);
const aborted = () => new RequestFailed('aborted: the service is stopping', false);

/** Resolves like dns.lookup, failing when any address the name resolves to is not public. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    for (const { address } of addresses) {
      const kind = nonPublic(address);
      if (kind) return callback(notAllowed(`${hostname} resolves to ${address}, ${kind}`), '', 0);
    }
    if (options.all) return callback(null, addresses);
    const [first] = addresses;
    if (!first) return callback(new RequestFailed(`${hostname} resolves to no address`, true), '', 0);
    callback(null, first.address, first.family);
  });
};

export interface HttpClientOptions {
  timeoutMs: number;
  /** Destinations may be loopback, private or link-local (ALLOW_PRIVATE_DESTINATIONS, local development). */
  allowPrivate: boolean;
}

export class DestinationClient {
  constructor(private readonly options: HttpClientOptions) {}

  /** The answer, whatever its status; throws RequestFailed when there is none, or when `signal` aborts. */
  send(request: HttpRequest, signal?: AbortSignal): Promise<HttpResponse> {
    if (signal?.aborted) return Promise.reject(aborted());
    const url = new URL(request.url);
    const literal = ipLiteral(url.hostname);
    const kind = this.options.allowPrivate || !literal ? null : nonPublic(literal);
    if (kind) return Promise.reject(notAllowed(`${literal} is ${kind}`));
    const { timeoutMs } = this.options;
    return new Promise((resolve, reject) => {
      let req: ClientRequest;
      try {
        // agent: false, so no pooled socket (connected under another policy) is ever reused.
        req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
          method: request.method,
          // Node sends a DELETE's body only with a Content-Length (it does not chunk DELETE by default).
          headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
          agent: false,
          ...(this.options.allowPrivate ? {} : { lookup: publicLookup }),
        });
      } catch (err) {
        // A header value that HTTP cannot carry (a token with a newline): no retry will help.
        reject(new RequestFailed(`the request cannot be sent: ${err instanceof Error ? err.message : String(err)}`, false));
        return;
      }
      const settled = () => {
        clearTimeout(deadline);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err: RequestFailed) => {
        settled();
        reject(err);
        req.destroy();
      };
      const onAbort = () => fail(aborted());
      const deadline = setTimeout(() => fail(new RequestFailed(`timeout: no complete answer within ${timeoutMs} ms`, true)), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const answer = () => {
          settled();
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= MAX_ANSWER_BYTES) {
            answer();
            req.destroy();
          }
        });
        res.on('end', answer);
        res.on('error', (err) => fail(new RequestFailed(`${err.name}: ${err.message}`, true)));
        res.on('close', () => {
          if (!res.complete) fail(new RequestFailed('the connection closed before the answer was complete', true));
        });
      });
      req.on('error', (err: Error & { code?: string }) => {
        fail(err instanceof RequestFailed ? err : new RequestFailed(`${err.code ?? err.name}: ${err.message}`, true));
      });
      req.end(request.body);
    });
  }
}
