// Verifies a notification's Stripe-Signature with the stripe package's own helper. One client
// instance for the process: the helper needs no network and no real API key.

import Stripe from 'stripe';
import { AppError } from '../errors.js';

const stripe = new Stripe('sk_test_dummy');

/** Seconds a signature stays acceptable (the helper accepts future timestamps; only age is checked). */
export const SIGNATURE_TOLERANCE_S = 300;

/**
 * The verified notification, parsed from exactly the bytes that were signed. The signature is
 * checked on its own first, so that a correctly signed body is never answered invalid_signature:
 * a thin event (an id and a type, no object) is refused for what it is.
 */
export function verifyNotification(rawBody: Buffer, header: unknown, secret: string): unknown {
  if (typeof header !== 'string' || header.length === 0) throw new AppError('invalid_signature', 'the Stripe-Signature header is missing');
  try {
    stripe.webhooks.signature!.verifyHeader(rawBody, header, secret, SIGNATURE_TOLERANCE_S);
  } catch (err) {
    throw new AppError('invalid_signature', err instanceof Error ? firstLine(err.message) : undefined);
  }
  let event: unknown;
  try {
    event = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new AppError('invalid_json');
  }
  if (typeof event === 'object' && event !== null && (event as { object?: unknown }).object === 'v2.core.event') {
    throw new AppError('unsupported_event', 'this is a thin event (object "v2.core.event"), which carries no object to read: '
      + 'configure the Stripe event destination with the snapshot payload style (object "event") and send it here');
  }
  return event;
}

const firstLine = (message: string) => message.split('\n')[0]!.trim();
