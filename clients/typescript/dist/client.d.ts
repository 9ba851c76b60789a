import type { CaptureParams, Card, CardToken, Customer, CustomerParams, Payment, PaymentParams, PaymentResult, Refund, RefundParams, ResponseInfo, StoredCard, StoredCardParams } from "./types.js";
/** The client's version, sent in its User-Agent. */
export declare const VERSION = "0.1.0";
/** Defaults of ClientOptions. */
export declare const DEFAULT_MAX_RETRIES = 4;
export declare const DEFAULT_BASE_DELAY_MS = 500;
export declare const DEFAULT_MAX_DELAY_MS = 8000;
/** Bounds one attempt (connection, request and whole answer). A payment takes the provider's time: leave it generous. */
export declare const DEFAULT_TIMEOUT_MS = 60000;
/**
 * Returns how long to wait, in milliseconds, before retry `retry` of a call
 * (1 for the first retry). `retryAfterMs` is the gateway's Retry-After of
 * the answer that is retried, 0 when it sent none; the client waits the
 * larger of the two whatever the backoff returns.
 */
export type Backoff = (retry: number, retryAfterMs: number) => number;
/**
 * Capped exponential backoff with jitter: before retry n the ceiling is
 * base·2^(n-1), at most `maxMs`, and the wait is drawn uniformly from its
 * upper half, so that clients that failed together do not retry together.
 * `random` returns a number in [0, 1).
 */
export declare function exponentialBackoff(baseMs: number, maxMs: number, random?: () => number): Backoff;
/** How a Client is made. */
export interface ClientOptions {
    /** The gateway, such as "https://pay.example.com" (without /v1). */
    baseUrl: string;
    /** A secret key: smtgw_sk_test_… or smtgw_sk_live_…. */
    apiKey: string;
    /** How many times a call is retried after its first attempt (default 4); 0 turns retries off. */
    maxRetries?: number | undefined;
    /** The wait before each retry (default exponentialBackoff(500, 8000)). */
    backoff?: Backoff | undefined;
    /** Bounds each attempt, in milliseconds (default 60 000). */
    timeoutMs?: number | undefined;
    /** Added before the client's own User-Agent, such as "shop/1.2". */
    userAgent?: string | undefined;
    /** The fetch to send with (default: the global fetch). */
    fetch?: typeof fetch | undefined;
    /** Waits `ms` or until `signal` aborts (rejecting then). For tests. */
    sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
}
/** Options of one call. */
export interface CallOptions {
    /**
     * The Idempotency-Key of a POST, 1 to 255 characters, instead of a
     * generated one. Give a key derived from your own operation (an order id)
     * to make a call safe to repeat across restarts of your program. GETs and
     * DELETEs ignore it.
     */
    idempotencyKey?: string | undefined;
    /** Sent as X-Request-Id on every attempt, so that the gateway's logs name it. */
    requestId?: string | undefined;
    /** Aborts the call: the attempt in flight and any wait. */
    signal?: AbortSignal | undefined;
    /**
     * Bounds the whole call, retries and waits included, in milliseconds: a
     * retry that could not start in time is not attempted, and the call
     * throws the last answer's error at once.
     */
    deadlineMs?: number | undefined;
    /** Called with what the last attempt answered, error or not. */
    onResponse?: ((info: ResponseInfo) => void) | undefined;
}
/**
 * The client of paygate's /v1 API. Every POST carries an Idempotency-Key,
 * generated per call (or given in CallOptions) and reused on each retry of
 * that call, so a retry never charges twice. A call is retried when
 * paygate's answer was lost: no answer came back, or a 5xx came that is not
 * paygate's JSON envelope (the 502 or 504 page of a proxy in front of the
 * gateway, whose node may have died holding the request). It is also retried
 * on 409 DUPLICATE_REQUEST with Retry-After (the first request with that key
 * is still running), on 429 and on 503, waiting capped exponential backoff
 * with jitter and never less than Retry-After. Every other error answer of
 * paygate throws a PaygateError at once: a retry with the same key would
 * replay it (CARD_DECLINED and PROVIDER_ERROR are stored under the key).
 * Only such a PaygateError is final: to try a declined payment again, call
 * again without a key (or with a new one). A call whose answer was lost on
 * every attempt throws a TransportError naming its key: the payment may
 * have been made, so never use a new key then; call again later with
 * `{ idempotencyKey: err.idempotencyKey }`, which answers what happened.
 */
export declare class Client {
    #private;
    /** Throws a TypeError when baseUrl is not an absolute http(s) URL or apiKey is empty. */
    constructor(options: ClientOptions);
    /**
     * Charges a card (POST /v1/payments). A decline throws a PaygateError named
     * CARD_DECLINED with declineCode and transactionId (the failed payment's
     * id); a provider failure, PROVIDER_ERROR with transactionId. Status
     * `created` (HTTP 202) means the provider's answer is not known yet: the
     * final status follows by webhook and getPayment.
     */
    createPayment(params: PaymentParams, options?: CallOptions): Promise<PaymentResult>;
    /** A payment (GET /v1/payments/{id}); NOT_FOUND when this merchant and mode have none with that id. */
    getPayment(id: string, options?: CallOptions): Promise<Payment>;
    /** The most recently created payment with your reference (GET /v1/payments?merchantRef=…); NOT_FOUND when none. */
    lookupPayment(merchantRef: string, options?: CallOptions): Promise<Payment>;
    /** Captures an authorized payment, all of it unless params.amount says less (POST /v1/payments/{id}/capture). */
    capturePayment(id: string, params?: CaptureParams, options?: CallOptions): Promise<Payment>;
    /** Cancels an authorized payment (POST /v1/payments/{id}/void). */
    voidPayment(id: string, options?: CallOptions): Promise<Payment>;
    /** A payment's refunds, newest first (GET /v1/payments/{id}/refunds). The list is whole: the endpoint does not paginate. */
    listPaymentRefunds(paymentId: string, options?: CallOptions): Promise<Refund[]>;
    /**
     * Refunds a captured payment, fully or partly (POST /v1/refunds).
     * INVALID_REQUEST names the param: transactionId (not captured), currency
     * (not the payment's), amount (more than is left to refund).
     */
    createRefund(params: RefundParams, options?: CallOptions): Promise<Refund>;
    /** A refund (GET /v1/refunds/{id}). */
    getRefund(id: string, options?: CallOptions): Promise<Refund>;
    /** Creates the customer with params.externalId, or updates it; it keeps its id and createdAt (POST /v1/customers). */
    upsertCustomer(params: CustomerParams, options?: CallOptions): Promise<Customer>;
    /** A customer by the gateway's id of it (GET /v1/customers/{id}). */
    getCustomer(id: string, options?: CallOptions): Promise<Customer>;
    /**
     * Tokenizes a card with the merchant's public key (POST /v1/tokens), as the
     * card fields do in a browser: the client's own (secret) key is not sent.
     * The token pays once, within 15 minutes (`paymentMethod: "token"`). For
     * tests and tools: a shop's server should never see the card.
     */
    createToken(publicKey: string, card: Card, options?: CallOptions): Promise<CardToken>;
    /** Stores a card for a customer (POST /v1/customers/{id}/cards); the same number again returns the card already stored. */
    saveCard(customerId: string, card: StoredCardParams, options?: CallOptions): Promise<StoredCard>;
    /** A customer's stored cards, newest first (GET /v1/customers/{id}/cards). The list is whole: the endpoint does not paginate. */
    listCards(customerId: string, options?: CallOptions): Promise<StoredCard[]>;
    /**
     * Deletes a stored card (DELETE /v1/customers/{id}/cards/{cardId}). A card
     * already deleted is NOT_FOUND, and so is a retried deletion whose first
     * answer was lost on the way: either way the card is gone.
     */
    deleteCard(customerId: string, cardId: string, options?: CallOptions): Promise<void>;
}
/** Reads Retry-After, delay seconds or an HTTP date, in milliseconds; 0 when absent or unreadable. */
export declare function retryAfterMs(value: string | null, now: number): number;
