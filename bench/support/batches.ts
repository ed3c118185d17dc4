// The ingest benchmarks' batches of events: a mix of names, 80 % with a user id (20 % anonymous
// visitors), a JSON payload, and a message id each, numbered across every batch made here.

export const BATCH = 500;
const NAMES = ['view_item', 'add_to_cart', 'login', 'feature_used', 'purchase', 'signup'];
let seq = 0;

/** The next number of the sequence (page-view batches number their rows from it too). */
export const nextSeq = () => seq++;

/** A `{ batch }` body of BATCH events. */
export function eventBatch(): string {
  return JSON.stringify({ batch: Array.from({ length: BATCH }, () => {
    const i = nextSeq();
    const user = (i * 7919) % 100_000;
    return {
      event_name: NAMES[i % NAMES.length],
      ...(i % 5 === 0 ? { visitor_id: `v_${user}_${i % 3}` } : { user_id: `u_${user}`, visitor_id: `v_${user}_0` }),
      properties: { plan: ['free', 'pro', 'team'][i % 3], item: { category: 'books', price: (i % 500) / 10 }, quantity: i % 5 },
      message_id: `m_${i}`,
    };
  }) });
}

/**
 * A /v1/batch body of BATCH Segment track calls for the users eventBatch() draws from, made as it is
 * sent; message ids `<prefix>_<n>`.
 */
export function segmentBatch(prefix: string): string {
  const sentAt = new Date().toISOString();
  return JSON.stringify({ batch: Array.from({ length: BATCH }, () => {
    const i = nextSeq();
    const user = (i * 7919) % 100_000;
    return {
      type: 'track', event: ['view_item', 'add_to_cart', 'login', 'feature_used'][i % 4], userId: `u_${user}`, anonymousId: `v_${user}_0`,
      properties: { plan: ['free', 'pro', 'team'][i % 3], item: { category: 'books', price: (i % 500) / 10 }, quantity: i % 5 },
      messageId: `${prefix}_${i}`, timestamp: sentAt, context: { library: { name: 'analytics-node', version: '2' } },
    };
  }), sentAt });
}
