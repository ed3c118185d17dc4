// Credentials are write-only, so an edit cannot send them back: a destination that names a saved
// one by `id` and leaves its credentials out keeps the saved ones. The result must then be complete.

import { type FieldError, invalidRequest, pointer } from '../../errors.js';
import { CREDENTIALS, type Destination, type DestinationInput, storedDestination } from './schema.js';

type Complete = Omit<Destination, 'id'>;

function merged(input: DestinationInput, previous: Destination[]): Record<string, unknown> {
  const { id, ...config } = input;
  const saved = id === undefined ? undefined : previous.find((p) => p.id === id && p.type === input.type);
  if (!saved) return config;
  const kept = Object.fromEntries(CREDENTIALS[input.type]
    .filter((key) => (config as Record<string, unknown>)[key] === undefined && (saved as Record<string, unknown>)[key] !== undefined)
    .map((key) => [key, (saved as Record<string, unknown>)[key]]));
  return { ...config, ...kept };
}

/** The destinations with their credentials, or 400 invalid_request naming each missing one. */
export function completeDestinations(inputs: DestinationInput[], previous: Destination[]): Complete[] {
  const errors: FieldError[] = [];
  const complete = inputs.map((input, i) => {
    const parsed = storedDestination.safeParse(merged(input, previous));
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        errors.push({ field: pointer(['destinations', i, ...issue.path]), message: `${issue.message}; a saved destination's credentials are kept only when its id is given` });
      }
      return null;
    }
    const destination = parsed.data;
    if (destination.type === 'google_customer_match' && destination.api === 'google_ads' && !destination.developer_token) {
      errors.push({ field: pointer(['destinations', i, 'developer_token']), message: 'the Google Ads API needs a developer token' });
    }
    return destination;
  });
  if (errors.length > 0) throw invalidRequest(errors);
  return complete as Complete[];
}
