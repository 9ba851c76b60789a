/** The error names the gateway answers with (`PaygateError.name`). */
export declare const ErrorName: {
    /** 400 (413 for a body over 64 KiB): `param` names the field. */
    readonly InvalidRequest: "INVALID_REQUEST";
    /** 401: the key is missing, unknown, revoked or expired. */
    readonly Unauthorized: "UNAUTHORIZED";
    /** 404: no such resource for this merchant and mode. */
    readonly NotFound: "NOT_FOUND";
    /** 405. */
    readonly MethodNotAllowed: "METHOD_NOT_ALLOWED";
    /** 409: the key was used with another request, or is still running. */
    readonly DuplicateRequest: "DUPLICATE_REQUEST";
    /** 429. */
    readonly RateLimited: "RATE_LIMITED";
    /** 400: `declineCode` and `transactionId` are set. */
    readonly CardDeclined: "CARD_DECLINED";
    /** 502: `transactionId` is set; the payment failed. */
    readonly ProviderError: "PROVIDER_ERROR";
    /** 500. */
    readonly InternalError: "INTERNAL_ERROR";
    /** 503. */
    readonly ServiceUnavailable: "SERVICE_UNAVAILABLE";
};
/** The decline codes of a CARD_DECLINED error, and of `Payment.declineCode`. */
export declare const DeclineCode: {
    readonly Generic: "generic_decline";
    readonly InsufficientFunds: "insufficient_funds";
    readonly ExpiredCard: "expired_card";
    readonly IncorrectCvc: "incorrect_cvc";
};
/** The `error` object of an error answer, as the gateway sends it. */
export interface ErrorBody {
    status: number;
    name: string;
    message: string;
    param?: string;
    declineCode?: string;
    transactionId?: string;
}
/**
 * An error answer of the gateway. Like DOMException's, its `name` says which
 * error it is: the API's error name (`"CARD_DECLINED"`, see `ErrorName`), or
 * `"PaygateError"` when the answer was not the API's envelope (a proxy's
 * 4xx page; a proxy's 5xx page is a lost answer, thrown as a TransportError).
 */
export declare class PaygateError extends Error {
    /** The HTTP status of the answer. */
    readonly status: number;
    /** The field to blame, dotted (`card.number`), or a header (`Idempotency-Key`). */
    readonly param: string | undefined;
    /** Why the issuer declined (CARD_DECLINED only). */
    readonly declineCode: string | undefined;
    /** The payment a CARD_DECLINED or PROVIDER_ERROR answer recorded as failed. */
    readonly transactionId: string | undefined;
    /** The answer's X-Request-Id: quote it when asking the gateway's operator. */
    readonly requestId: string | undefined;
    /** The Idempotency-Key the call sent (POST only). */
    readonly idempotencyKey: string | undefined;
    /** The answer's Retry-After in milliseconds (0 when absent). */
    readonly retryAfterMs: number;
    constructor(body: ErrorBody, extra?: {
        requestId?: string | undefined;
        idempotencyKey?: string | undefined;
        retryAfterMs?: number;
    });
}
/**
 * A call that got no usable answer on every attempt: the gateway could not be
 * reached, the connection failed before the answer was read, or a proxy
 * answered a 5xx page of its own instead of paygate's answer (`cause` is then
 * a LostAnswerError). The request may or may not have been processed: calling
 * again with `{ idempotencyKey: err.idempotencyKey }` is safe and answers what
 * happened; a new key could charge twice. `cause` is the last attempt's
 * failure.
 */
export declare class TransportError extends Error {
    readonly name = "TransportError";
    readonly method: string;
    readonly path: string;
    /** The Idempotency-Key the call sent (POST only). */
    readonly idempotencyKey: string | undefined;
    readonly attempts: number;
    constructor(method: string, path: string, idempotencyKey: string | undefined, attempts: number, cause: unknown);
}
/**
 * An attempt answered with a 5xx that is not paygate's JSON envelope: a proxy
 * in front of the gateway (nginx's 502 or 504 page) answered in its place, so
 * paygate's own answer, if any, was lost. It is the `cause` of a
 * TransportError.
 */
export declare class LostAnswerError extends Error {
    readonly name = "LostAnswerError";
    /** The proxy's HTTP status. */
    readonly status: number;
    /** The answer's X-Request-Id, if the proxy sent one. */
    readonly requestId: string | undefined;
    constructor(status: number, requestId: string | undefined);
}
