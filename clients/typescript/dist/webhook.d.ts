/** How far webhook-timestamp may be from this clock, either way, before a delivery is refused: it bounds replays. */
export declare const WEBHOOK_TOLERANCE_SECONDS: number;
/** The event types of webhooks (WebhookEvent.event). */
export declare const EventType: {
    readonly PaymentCaptured: "payment.captured";
    readonly PaymentFailed: "payment.failed";
    readonly PaymentAuthorized: "payment.authorized";
    readonly PaymentVoided: "payment.voided";
    readonly RefundCreated: "refund.created";
    readonly RefundSucceeded: "refund.succeeded";
    readonly RefundFailed: "refund.failed";
    /** Sent by `paygate webhook test`. */
    readonly Ping: "ping";
};
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
export declare class WebhookVerificationError extends Error {
    readonly name = "WebhookVerificationError";
    readonly reason: WebhookErrorReason;
    constructor(reason: WebhookErrorReason, message: string);
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
export declare function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Uint8Array, now?: Date): WebhookEvent;
