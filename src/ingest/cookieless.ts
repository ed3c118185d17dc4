// Visitors without a cookie (the tracker's data-cookieless, decisions §12): the visitor id is an
// HMAC-SHA256 of the workspace, the address and the user agent under the day's salt (control
// store, store/control/salts.ts), so the same browser is one visitor for a UTC day and a new one
// the next. Neither the address nor the user agent is stored; once a day's salt is deleted, its ids
// cannot be made again from them.

import { createHmac, randomBytes } from 'node:crypto';
import { daySalt } from '../store/control/salts.js';
import type { ControlStore } from '../store/control/store.js';

/** Where a page view came from, as the request shows it. */
export interface RequestOrigin {
  address: string;
  userAgent: string;
}

export class CookielessVisitors {
  /** The salt of the current day in this process, once read. */
  private salt: { day: string; value: Promise<string> } | null = null;

  constructor(private readonly control: ControlStore, private readonly clock: () => Date) {}

  async visitorId(ws: string, origin: RequestOrigin): Promise<string> {
    const now = this.clock();
    const day = now.toISOString().slice(0, 10);
    if (this.salt?.day !== day) {
      const value = daySalt(this.control, day, randomBytes(32).toString('base64url'), now);
      this.salt = { day, value };
      // A failed read is not kept: the next page view reads again.
      value.catch(() => {
        if (this.salt?.value === value) this.salt = null;
      });
    }
    const salt = await this.salt.value;
    const mac = createHmac('sha256', salt).update(`${ws}\n${origin.address}\n${origin.userAgent}`).digest('base64url');
    return `cl_${mac.slice(0, 32)}`;
  }
}
