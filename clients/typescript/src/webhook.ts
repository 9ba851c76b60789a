import { createHmac, timingSafeEqual } from "node:crypto";

// Webhooks follow Standard Webhooks (https://www.standardwebhooks.com):
// every delivery carries webhook-id (the event id, the same on every retry),
// webhook-timestamp (unix seconds of the attempt) and webhook-signature,
// "v1,<base64 HMAC-SHA256>" (space-separated when several secrets sign,
// during a rotation), the HMAC keyed with the base64-decoded part of the
// endpoint's secret "whsec_<base64>" over "{id}.{timestamp}.{body}".

/** How far webhook-timestamp may be from this clock, either way, before a delivery is refused: it bounds replays. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/** The event types of webhooks (WebhookEvent.event). */
export const EventType = {
  PaymentCaptured: "payment.captured",
  PaymentFailed: "payment.failed",
  PaymentAuthorized: "payment.authorized",
  PaymentVoided: "payment.voided",
  RefundCreated: "refund.created",
  RefundSucceeded: "refund.succeeded",
  RefundFailed: "refund.failed",
  /** Sent by `paygate webhook test`. */
  Ping: "ping",
} as const;

/** A webhook's body. */
export interface WebhookEvent {
  /** The event's id, the same as webhook-id and on every redelivery: deduplicate on it. */
  id: string;
  event: string;
  mode: "test" | "live";
  timestamp: string;
  data: {
    /** Payment and refund events. */
    transactionId?: string;
    /** Refund events. */
    refundId?: string;
    merchantId: string;
    /** The payment's status, or the refund's for refund events. */
    status?: string;
    /** In the currency's minor units (1050 is 10.50 EUR), unlike the REST API's decimal strings. */
    amount?: number;
    currency?: string;
    errorCode?: string | null;
    errorMessage?: string | null;
    declineCode?: string;
    /** Ping only. */
    message?: string;
  };
}

/** Why verifyWebhook refused a delivery. */
export type WebhookErrorReason = "invalid_secret" | "missing_header" | "invalid_timestamp" | "no_matching_signature" | "invalid_body";

/** A delivery verifyWebhook refused. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  readonly reason: WebhookErrorReason;

  constructor(reason: WebhookErrorReason, message: string) {
    super(`paygate webhook: ${message}`);
    this.reason = reason;
  }
}

/** The headers of a request: fetch's Headers, or Node's IncomingHttpHeaders (lower-case keys). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Checks that `body`, the raw body of a webhook request as received, with its
 * headers, was signed with the endpoint's secret ("whsec_…") less than five
 * minutes ago, and returns the event. Verify the raw bytes: re-encoded JSON
 * does not verify. Throws a WebhookVerificationError otherwise. A verified
 * delivery may still be a redelivery: deduplicate on the event's id.
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  now: Date = new Date(),
): WebhookEvent {
  const key = decodeSecret(secret);
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  for (const [name, value] of [["webhook-id", id], ["webhook-timestamp", timestamp], ["webhook-signature", signatures]] as const) {
    if (!value) throw new WebhookVerificationError("missing_header", `missing header ${name}`);
  }
  if (!/^-?\d+$/.test(timestamp!)) {
    throw new WebhookVerificationError("invalid_timestamp", `${JSON.stringify(timestamp)} is not unix seconds`);
  }
  const skew = Math.abs(now.getTime() / 1000 - Number(timestamp));
  if (!(skew <= WEBHOOK_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError("invalid_timestamp", `the timestamp is ${Math.floor(skew)}s away from now, more than ${WEBHOOK_TOLERANCE_SECONDS}s`);
  }
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const want = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(raw).digest();
  const matched = signatures!.split(/\s+/).some((s) => {
    const comma = s.indexOf(",");
    if (comma < 0 || s.slice(0, comma) !== "v1") return false;
    const got = Buffer.from(s.slice(comma + 1), "base64");
    return got.length === want.length && timingSafeEqual(got, want);
  });
  if (!matched) throw new WebhookVerificationError("no_matching_signature", "no matching signature");
  try {
    return JSON.parse(raw.toString("utf8")) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError("invalid_body", "a signed body is not an event");
  }
}

/** Returns the key bytes of "whsec_<base64>" or of the bare base64. */
function decodeSecret(secret: string): Buffer {
  const b64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) {
    throw new WebhookVerificationError("invalid_secret", "the secret is not whsec_ and base64");
  }
  return Buffer.from(b64, "base64");
}

/** One header's value, by its lower-case name. */
function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const h = headers as Record<string, string | string[] | undefined>;
  const v = h[name] ?? Object.entries(h).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(v) ? v.join(" ") : v;
}
