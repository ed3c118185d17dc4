// The reserved trait `$consent` (decisions §12): a person's consent, `{ analytics, ads }`, each a
// boolean, set like any trait (null clears it). Anything else is refused, naming the field, so a
// typo never reads as consent given.

import type { z } from 'zod';

export const CONSENT_TRAIT = '$consent';
export const CONSENT_CATEGORIES = ['analytics', 'ads'] as const;

const isCategory = (key: string): key is (typeof CONSENT_CATEGORIES)[number] => (CONSENT_CATEGORIES as readonly string[]).includes(key);

/** The first fault of a traits object's `$consent`: its path below the traits and why. */
export function consentFault(traits: Record<string, unknown>): { path: string[]; message: string } | null {
  if (!Object.hasOwn(traits, CONSENT_TRAIT)) return null;
  const consent = traits[CONSENT_TRAIT];
  if (consent === null) return null;
  if (typeof consent !== 'object' || Array.isArray(consent)) {
    return { path: [CONSENT_TRAIT], message: 'must be an object such as { "analytics": true, "ads": false } (or null)' };
  }
  for (const [key, value] of Object.entries(consent)) {
    if (!isCategory(key)) return { path: [CONSENT_TRAIT, key], message: `is not a consent category: expected ${CONSENT_CATEGORIES.join(' or ')}` };
    if (typeof value !== 'boolean') return { path: [CONSENT_TRAIT, key], message: 'must be true or false' };
  }
  return null;
}

/** zod check of `traits`: a well-formed `$consent`. */
export function consentWellFormed(traits: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const fault = consentFault(traits);
  if (fault) ctx.addIssue({ code: 'custom', path: fault.path, message: fault.message });
}
