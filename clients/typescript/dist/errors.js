/** The error names the gateway answers with (`PaygateError.name`). */
export const ErrorName = {
    /** 400 (413 for a body over 64 KiB): `param` names the field. */
    InvalidRequest: "INVALID_REQUEST",
    /** 401: the key is missing, unknown, revoked or expired. */
    Unauthorized: "UNAUTHORIZED",
    /** 404: no such resource for this merchant and mode. */
    NotFound: "NOT_FOUND",
    /** 405. */
    MethodNotAllowed: "METHOD_NOT_ALLOWED",
    /** 409: the key was used with another request, or is still running. */
    DuplicateRequest: "DUPLICATE_REQUEST",
    /** 429. */
    RateLimited: "RATE_LIMITED",
    /** 400: `declineCode` and `transactionId` are set. */
    CardDeclined: "CARD_DECLINED",
    /** 502: `transactionId` is set; the payment failed. */
    ProviderError: "PROVIDER_ERROR",
    /** 500. */
    InternalError: "INTERNAL_ERROR",
    /** 503. */
    ServiceUnavailable: "SERVICE_UNAVAILABLE",
};
/** The decline codes of a CARD_DECLINED error, and of `Payment.declineCode`. */
export const DeclineCode = {
    Generic: "generic_decline",
    InsufficientFunds: "insufficient_funds",
    ExpiredCard: "expired_card",
    IncorrectCvc: "incorrect_cvc",
};
/**
 * An error answer of the gateway. Like DOMException's, its `name` says which
 * error it is: the API's error name (`"CARD_DECLINED"`, see `ErrorName`), or
 * `"PaygateError"` when the answer was not the API's envelope (a proxy's
 * 4xx page; a proxy's 5xx page is a lost answer, thrown as a TransportError).
 */
export class PaygateError extends Error {
    /** The HTTP status of the answer. */
    status;
    /** The field to blame, dotted (`card.number`), or a header (`Idempotency-Key`). */
    param;
    /** Why the issuer declined (CARD_DECLINED only). */
    declineCode;
    /** The payment a CARD_DECLINED or PROVIDER_ERROR answer recorded as failed. */
    transactionId;
    /** The answer's X-Request-Id: quote it when asking the gateway's operator. */
    requestId;
    /** The Idempotency-Key the call sent (POST only). */
    idempotencyKey;
    /** The answer's Retry-After in milliseconds (0 when absent). */
    retryAfterMs;
    constructor(body, extra = {}) {
        super(body.message);
        this.name = body.name || "PaygateError";
        this.status = body.status;
        this.param = body.param || undefined;
        this.declineCode = body.declineCode || undefined;
        this.transactionId = body.transactionId || undefined;
        this.requestId = extra.requestId;
        this.idempotencyKey = extra.idempotencyKey;
        this.retryAfterMs = extra.retryAfterMs ?? 0;
    }
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
export class TransportError extends Error {
    name = "TransportError";
    method;
    path;
    /** The Idempotency-Key the call sent (POST only). */
    idempotencyKey;
    attempts;
    constructor(method, path, idempotencyKey, attempts, cause) {
        super(`paygate client: ${method} ${path}: no answer after ${attempts} attempt(s): ${describe(cause)}`, { cause });
        this.method = method;
        this.path = path;
        this.idempotencyKey = idempotencyKey;
        this.attempts = attempts;
    }
}
/**
 * An attempt answered with a 5xx that is not paygate's JSON envelope: a proxy
 * in front of the gateway (nginx's 502 or 504 page) answered in its place, so
 * paygate's own answer, if any, was lost. It is the `cause` of a
 * TransportError.
 */
export class LostAnswerError extends Error {
    name = "LostAnswerError";
    /** The proxy's HTTP status. */
    status;
    /** The answer's X-Request-Id, if the proxy sent one. */
    requestId;
    constructor(status, requestId) {
        super(`answered ${status} with a body that is not paygate's envelope (a proxy's page): paygate's answer was lost`);
        this.status = status;
        this.requestId = requestId;
    }
}
/** describe names a failure with its cause, as fetch hides it there. */
function describe(err) {
    if (!(err instanceof Error))
        return String(err);
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
}
