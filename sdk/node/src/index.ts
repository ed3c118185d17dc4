export { Analytics, type AnalyticsOptions } from './analytics.js';
export { DeliveryError, type DeliveryFailure } from './errors.js';
export { MAX_BATCH_BYTES, MAX_MESSAGE_BYTES } from './limits.js';
export type { AliasInput, Common, IdentifyInput, Identity, Message, MessageType, PageInput, TrackInput } from './message.js';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.js';
export {
  type CookieSource, type FetchRequestLike, type NodeRequestLike, readCookie, stripeMetadata, type StripeMetadata, VISITOR_COOKIE,
} from './stripe-metadata.js';
export type { RetryNotice } from './transport.js';
export { LIBRARY } from './version.js';
