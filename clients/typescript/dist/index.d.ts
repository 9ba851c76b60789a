/**
 * The TypeScript client of paygate's /v1 API, for merchant backends on
 * Node.js 20 or later. No runtime dependencies: fetch and node:crypto.
 *
 * ```ts
 * import { Client, PaygateError, ErrorName } from "@paygate/client";
 *
 * const paygate = new Client({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.PAYGATE_KEY! });
 * const payment = await paygate.createPayment({ amount: "10.50", currency: "EUR", customerId: "customer-42", card, billing },
 *   { idempotencyKey: "order-1001" });
 * ```
 *
 * @module
 */
export { Client, exponentialBackoff, retryAfterMs, VERSION, DEFAULT_MAX_RETRIES, DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS, DEFAULT_TIMEOUT_MS, } from "./client.js";
export type { Backoff, CallOptions, ClientOptions } from "./client.js";
export { DeclineCode, ErrorName, LostAnswerError, PaygateError, TransportError } from "./errors.js";
export type { ErrorBody } from "./errors.js";
export type * from "./types.js";
export { EventType, verifyWebhook, WebhookVerificationError, WEBHOOK_TOLERANCE_SECONDS } from "./webhook.js";
export type { WebhookErrorReason, WebhookEvent, WebhookHeaders } from "./webhook.js";
