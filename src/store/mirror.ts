// The copies of control rows an analytical engine keeps when its queries cannot read the control
// tables in place (ClickHouse): persons, visitors, customers' links, payments and exchange rates. The control writes
// that change those rows write the copies themselves (control/people.ts, control/payments.ts), in
// the same unit of work, so a feature cannot store one side and forget the other.

import type { PeopleMirror } from './control/people.js';
import type { PaymentsMirror } from './control/payments.js';
import type { RatesMirror } from './control/rates.js';

export type ControlMirror = PeopleMirror & PaymentsMirror & RatesMirror;

/** No copies: the engine reads the control tables in place (DuckDB), or its rows arrive another way (a load). */
export const NO_COPIES: ControlMirror = {
  persons: async () => {},
  visitors: async () => {},
  customers: async () => {},
  payments: async () => {},
  exchangeRates: async () => {},
};
