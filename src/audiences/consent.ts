// Ads consent at delivery (decisions §12). An ad platform holds a member unless its `$consent.ads`
// trait is false; a destination with `require_consent` only when it is true. Webhooks receive every
// member. An audience member the platform may not hold is withheld: left out of the pages it would
// be added by, and recorded (store/control/consent.ts). After a destination's deliveries, the
// consent pass compares the snapshot it holds with its members' consent now, so a change of consent
// reaches the platform at the next delivery run even when the audience did not change: a removal,
// or an add once consent is given again.

import type { DiffMember, MemberRow } from '../store/analytics.js';
import {
  adsConsent, type DestinationKey, heldSnapshot, release, releaseAfter, withheldBetween, withhold,
} from '../store/control/consent.js';
import type { ControlSql } from '../store/control/store.js';
import type { Stores } from '../store/open.js';
import type { DeliveryContext } from './destinations/driver.js';
import { sendMembers } from './destinations/removal.js';
import type { AdPlatform } from './destinations/schema.js';

/** Members read per step of the consent pass. */
const PASS_PAGE = 50_000;

/** Whether the platform may hold a member with this ads consent (undefined: none given). */
export const mayHold = (destination: AdPlatform, ads: boolean | undefined): boolean =>
  ads === true || (!destination.require_consent && ads !== false);

/** The explicit ads consent of the persons among `members`, by profile (a person's profile is its key). */
export const consentOf = (control: ControlSql, ws: string, members: { profile: number }[]): Promise<Map<number, boolean>> =>
  adsConsent(control, ws, members.filter((m) => m.profile > 0).map((m) => m.profile));

export interface ScreenedPage {
  /** What the platform is sent: the added members it may hold, and every removed one. */
  members: DiffMember[];
  consent: Map<number, boolean>;
  withheld: number;
  /** Once the page went through: the withheld are recorded, the others are not withheld any more. */
  settle(): Promise<void>;
}

/** A delivery page as an ad platform receives it. */
export async function screenPage(control: ControlSql, key: DestinationKey, destination: AdPlatform, members: DiffMember[]): Promise<ScreenedPage> {
  const consent = await consentOf(control, key.ws, members);
  const held = (m: DiffMember) => m.change === 'removed' || mayHold(destination, consent.get(m.profile));
  const sent = members.filter(held);
  const withheld = members.filter((m) => !held(m)).map((m) => m.profile);
  return {
    members: sent, consent, withheld: withheld.length,
    async settle() {
      await withhold(control, key, withheld);
      await release(control, key, sent.map((m) => m.profile));
    },
  };
}

/**
 * The consent pass over the snapshot the destination holds (none while a delivery is pending or
 * half done: the next one converges first): removes the members that lost consent, adds those
 * withheld that have it again, and forgets withheld profiles that left the audience. Answers what
 * it sent, or null when it did not run.
 */
export async function sendConsentChanges(stores: Stores, key: DestinationKey, destination: AdPlatform,
  context: (deliveryId: number) => DeliveryContext): Promise<{ added: number; removed: number } | null> {
  const { control, analytics } = stores;
  const held = await heldSnapshot(control, key);
  if (!held) return null;
  const sent = { added: 0, removed: 0 };
  let last: number | null = null;
  for (;;) {
    const page = await analytics.membersPage(key.ws, held.snapshotId, last === null ? null : BigInt(last), PASS_PAGE);
    if (page.length === 0) break;
    const through = page.at(-1)!.profile;
    await passPage(control, key, destination, page, await withheldBetween(control, key, last, through), () => context(held.deliveryId), sent);
    last = through;
    if (page.length < PASS_PAGE) break;
  }
  await releaseAfter(control, key, last);
  return sent;
}

async function passPage(control: ControlSql, key: DestinationKey, destination: AdPlatform, page: MemberRow[], withheld: Set<number>,
  context: () => DeliveryContext, sent: { added: number; removed: number }): Promise<void> {
  const persons = page.filter((m) => m.profile > 0);
  const consent = await consentOf(control, key.ws, persons);
  const allowed = (m: MemberRow) => mayHold(destination, consent.get(m.profile));
  const lost = persons.filter((m) => !allowed(m) && !withheld.has(m.profile)).map((m): DiffMember => ({ ...m, change: 'removed' }));
  const regained = persons.filter((m) => allowed(m) && withheld.has(m.profile)).map((m): DiffMember => ({ ...m, change: 'added' }));
  const inPage = new Set(page.map((m) => m.profile));
  const left = [...withheld].filter((profile) => !inPage.has(profile));
  if (lost.length > 0) await sendMembers(destination, 'removed', lost, consent, context());
  await withhold(control, key, lost.map((m) => m.profile));
  if (regained.length > 0) await sendMembers(destination, 'added', regained, consent, context());
  await release(control, key, [...regained.map((m) => m.profile), ...left]);
  sent.removed += lost.length;
  sent.added += regained.length;
}
