// Errors the stores raise that a caller may answer for: the store knows nothing of HTTP, so each is
// mapped to an answer in the one place errors become responses (http/errors.ts).

/**
 * A unit's control rows are committed and its analytical rows kept in the outbox, but the
 * analytical store has not acknowledged them yet: they are inserted as soon as it does.
 */
export class AnalyticsDelayed extends Error {
  constructor(options?: ErrorOptions) {
    super('the analytical store has not acknowledged the rows yet; they are kept', options);
  }
}
