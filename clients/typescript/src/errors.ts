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
} as const;

/** The decline codes of a CARD_DECLINED error, and of `Payment.declineCode`. */
export const DeclineCode = {
  Generic: "generic_decline",
  InsufficientFunds: "insufficient_funds",
  ExpiredCard: "expired_card",
  IncorrectCvc: "incorrect_cvc",
} as const;

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
export class PaygateError extends Error {
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

  constructor(
    body: ErrorBody,
    extra: { requestId?: string | undefined; idempotencyKey?: string | undefined; retryAfterMs?: number } = {},
  ) {
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
  override readonly name = "TransportError";
  readonly method: string;
  readonly path: string;
  /** The Idempotency-Key the call sent (POST only). */
  readonly idempotencyKey: string | undefined;
  readonly attempts: number;

  constructor(method: string, path: string, idempotencyKey: string | undefined, attempts: number, cause: unknown) {
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
  override readonly name = "LostAnswerError";
  /** The proxy's HTTP status. */
  readonly status: number;
  /** The answer's X-Request-Id, if the proxy sent one. */
  readonly requestId: string | undefined;

  constructor(status: number, requestId: string | undefined) {
    super(`answered ${status} with a body that is not paygate's envelope (a proxy's page): paygate's answer was lost`);
    this.status = status;
    this.requestId = requestId;
  }
}

/** describe names a failure with its cause, as fetch hides it there. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return `${err.message}${cause}`;
}
