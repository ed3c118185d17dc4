// The service's limits for the Segment-compatible API (decisions §13, as Segment's own): a message
// above MAX_MESSAGE_BYTES is refused, and a request body above MAX_BATCH_BYTES.

export const MAX_MESSAGE_BYTES = 32 * 1024;
export const MAX_BATCH_BYTES = 500 * 1024;

const encoder = new TextEncoder();

/** The UTF-8 size of a string: what the limits count. */
export const byteLength = (text: string): number => encoder.encode(text).byteLength;
