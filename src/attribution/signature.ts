// Verifies a notification's Stripe-Signature with the stripe package's own helper. One client
// instance for the process: the helper needs no network and no real API key.

import Stripe from 'stripe';
import { AppError } from '../errors.js';

const stripe = new Stripe('sk_test_dummy');

/** Seconds a signature stays acceptable (the helper accepts future timestamps; only age is checked). */
export const SIGNATURE_TOLERANCE_S = 300;

/** The verified notification, parsed from exactly the bytes that were signed. */
export function verifyNotification(rawBody: Buffer, header: unknown, secret: string): unknown {
  if (typeof header !== 'string' || header.length === 0) throw new AppError('invalid_signature', 'the Stripe-Signature header is missing');
  try {
    return stripe.webhooks.constructEvent(rawBody, header, secret, SIGNATURE_TOLERANCE_S);
  } catch (err) {
    // A correctly signed body that is not JSON: the helper parses after verifying.
    if (err instanceof SyntaxError) throw new AppError('invalid_json');
    throw new AppError('invalid_signature', err instanceof Error ? firstLine(err.message) : undefined);
  }
}

const firstLine = (message: string) => message.split('\n')[0]!.trim();
