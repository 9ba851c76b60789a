import { randomUUID } from "node:crypto";
import { type ErrorBody, ErrorName, LostAnswerError, PaygateError, TransportError } from "./errors.js";
import type {
  CaptureParams,
  Card,
  CardToken,
  Customer,
  CustomerParams,
  Payment,
  PaymentParams,
  PaymentResult,
  Refund,
  RefundParams,
  ResponseInfo,
  StoredCard,
  StoredCardParams,
} from "./types.js";

/** The client's version, sent in its User-Agent. */
export const VERSION = "0.1.0";

/** Defaults of ClientOptions. */
export const DEFAULT_MAX_RETRIES = 4;
export const DEFAULT_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_DELAY_MS = 8000;
/** Bounds one attempt (connection, request and whole answer). A payment takes the provider's time: leave it generous. */
export const DEFAULT_TIMEOUT_MS = 60_000;

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
export function exponentialBackoff(baseMs: number, maxMs: number, random: () => number = Math.random): Backoff {
  return (retry) => {
    let ceiling = baseMs;
    for (let i = 1; i < retry && ceiling < maxMs; i++) ceiling *= 2;
    ceiling = Math.min(ceiling, maxMs);
    const half = ceiling / 2;
    return Math.floor(half + random() * (ceiling - half));
  };
}

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

/** The most of an answer's body that is read; the gateway's are far smaller. */
const MAX_ANSWER = 8 << 20;

interface Call {
  method: "GET" | "POST" | "DELETE";
  /** Escaped, from /v1. */
  path: string;
  query?: Record<string, string> | undefined;
  body?: unknown;
  /** Sent instead of the client's key: the public key of createToken. */
  apiKey?: string;
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
export class Client {
  readonly #base: string;
  readonly #apiKey: string;
  readonly #maxRetries: number;
  readonly #backoff: Backoff;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  /** Throws a TypeError when baseUrl is not an absolute http(s) URL or apiKey is empty. */
  constructor(options: ClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`paygate client: base URL ${JSON.stringify(options.baseUrl)} is not an absolute http or https URL`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "" || url.hash !== "") {
      throw new TypeError(`paygate client: base URL ${JSON.stringify(options.baseUrl)} is not an http or https URL without query`);
    }
    if (!options.apiKey) throw new TypeError("paygate client: the API key is empty");
    this.#base = url.href.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#maxRetries = Math.max(0, options.maxRetries ?? DEFAULT_MAX_RETRIES);
    this.#backoff = options.backoff ?? exponentialBackoff(DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#userAgent = (options.userAgent ? options.userAgent + " " : "") + `paygate-node/${VERSION}`;
    this.#fetch = options.fetch ?? fetch;
    this.#sleep = options.sleep ?? sleep;
  }

  /**
   * Charges a card (POST /v1/payments). A decline throws a PaygateError named
   * CARD_DECLINED with declineCode and transactionId (the failed payment's
   * id); a provider failure, PROVIDER_ERROR with transactionId. Status
   * `created` (HTTP 202) means the provider's answer is not known yet: the
   * final status follows by webhook and getPayment.
   */
  async createPayment(params: PaymentParams, options?: CallOptions): Promise<PaymentResult> {
    return this.#call({ method: "POST", path: "/v1/payments", body: params }, options);
  }

  /** A payment (GET /v1/payments/{id}); NOT_FOUND when this merchant and mode have none with that id. */
  async getPayment(id: string, options?: CallOptions): Promise<Payment> {
    return this.#call({ method: "GET", path: `/v1/payments/${pathId("payment", id)}` }, options);
  }

  /** The most recently created payment with your reference (GET /v1/payments?merchantRef=…); NOT_FOUND when none. */
  async lookupPayment(merchantRef: string, options?: CallOptions): Promise<Payment> {
    return this.#call({ method: "GET", path: "/v1/payments", query: { merchantRef } }, options);
  }

  /** Captures an authorized payment, all of it unless params.amount says less (POST /v1/payments/{id}/capture). */
  async capturePayment(id: string, params: CaptureParams = {}, options?: CallOptions): Promise<Payment> {
    return this.#call({ method: "POST", path: `/v1/payments/${pathId("payment", id)}/capture`, body: params }, options);
  }

  /** Cancels an authorized payment (POST /v1/payments/{id}/void). */
  async voidPayment(id: string, options?: CallOptions): Promise<Payment> {
    return this.#call({ method: "POST", path: `/v1/payments/${pathId("payment", id)}/void`, body: {} }, options);
  }

  /** A payment's refunds, newest first (GET /v1/payments/{id}/refunds). The list is whole: the endpoint does not paginate. */
  async listPaymentRefunds(paymentId: string, options?: CallOptions): Promise<Refund[]> {
    return this.#call({ method: "GET", path: `/v1/payments/${pathId("payment", paymentId)}/refunds` }, options);
  }

  /**
   * Refunds a captured payment, fully or partly (POST /v1/refunds).
   * INVALID_REQUEST names the param: transactionId (not captured), currency
   * (not the payment's), amount (more than is left to refund).
   */
  async createRefund(params: RefundParams, options?: CallOptions): Promise<Refund> {
    return this.#call({ method: "POST", path: "/v1/refunds", body: params }, options);
  }

  /** A refund (GET /v1/refunds/{id}). */
  async getRefund(id: string, options?: CallOptions): Promise<Refund> {
    return this.#call({ method: "GET", path: `/v1/refunds/${pathId("refund", id)}` }, options);
  }

  /** Creates the customer with params.externalId, or updates it; it keeps its id and createdAt (POST /v1/customers). */
  async upsertCustomer(params: CustomerParams, options?: CallOptions): Promise<Customer> {
    return this.#call({ method: "POST", path: "/v1/customers", body: params }, options);
  }

  /** A customer by the gateway's id of it (GET /v1/customers/{id}). */
  async getCustomer(id: string, options?: CallOptions): Promise<Customer> {
    return this.#call({ method: "GET", path: `/v1/customers/${pathId("customer", id)}` }, options);
  }

  /**
   * Tokenizes a card with the merchant's public key (POST /v1/tokens), as the
   * card fields do in a browser: the client's own (secret) key is not sent.
   * The token pays once, within 15 minutes (`paymentMethod: "token"`). For
   * tests and tools: a shop's server should never see the card.
   */
  async createToken(publicKey: string, card: Card, options?: CallOptions): Promise<CardToken> {
    if (!publicKey) throw new TypeError("paygate client: createToken needs the public key");
    return this.#call({ method: "POST", path: "/v1/tokens", body: { card }, apiKey: publicKey }, options);
  }

  /** Stores a card for a customer (POST /v1/customers/{id}/cards); the same number again returns the card already stored. */
  async saveCard(customerId: string, card: StoredCardParams, options?: CallOptions): Promise<StoredCard> {
    return this.#call({ method: "POST", path: `/v1/customers/${pathId("customer", customerId)}/cards`, body: { card } }, options);
  }

  /** A customer's stored cards, newest first (GET /v1/customers/{id}/cards). The list is whole: the endpoint does not paginate. */
  async listCards(customerId: string, options?: CallOptions): Promise<StoredCard[]> {
    return this.#call({ method: "GET", path: `/v1/customers/${pathId("customer", customerId)}/cards` }, options);
  }

  /**
   * Deletes a stored card (DELETE /v1/customers/{id}/cards/{cardId}). A card
   * already deleted is NOT_FOUND, and so is a retried deletion whose first
   * answer was lost on the way: either way the card is gone.
   */
  async deleteCard(customerId: string, cardId: string, options?: CallOptions): Promise<void> {
    await this.#call({ method: "DELETE", path: `/v1/customers/${pathId("customer", customerId)}/cards/${pathId("card", cardId)}` }, options);
  }

  /** Runs a call with its retries and returns its answer's data. */
  async #call<T>(call: Call, options: CallOptions = {}): Promise<T> {
    const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
    const key = call.method === "POST" ? options.idempotencyKey || randomUUID() : undefined;
    const deadline = options.deadlineMs === undefined ? undefined : Date.now() + options.deadlineMs;
    let target = this.#base + call.path;
    if (call.query) target += "?" + new URLSearchParams(call.query).toString();
    const headers: Record<string, string> = {
      "X-API-Key": call.apiKey ?? this.#apiKey,
      Accept: "application/json",
      "User-Agent": this.#userAgent,
    };
    if (payload !== undefined) headers["Content-Type"] = "application/json";
    if (key !== undefined) headers["Idempotency-Key"] = key;
    if (options.requestId) headers["X-Request-Id"] = options.requestId;
    const info: ResponseInfo = {
      status: 0,
      requestId: undefined,
      idempotencyKey: key,
      replayed: false,
      attempts: 0,
      rateLimit: { limit: 0, remaining: 0, resetSeconds: 0 },
    };

    try {
      for (let attempt = 1; ; attempt++) {
        info.attempts = attempt;
        let last: Error;
        let retry = false;
        let retryAfterMs = 0;
        const answer = await this.#send(target, call.method, headers, payload, options.signal, deadline).catch(
          (err: unknown) => err as Error,
        );
        if (answer instanceof Error) {
          Object.assign(info, { status: 0, requestId: undefined, replayed: false, rateLimit: { limit: 0, remaining: 0, resetSeconds: 0 } });
          last = new TransportError(call.method, call.path, key, attempt, answer);
          retry = !options.signal?.aborted;
        } else {
          info.status = answer.status;
          info.requestId = answer.headers.get("X-Request-Id") ?? undefined;
          info.replayed = answer.headers.get("Idempotent-Replayed") === "true";
          info.rateLimit = {
            limit: intHeader(answer.headers, "X-RateLimit-Limit"),
            remaining: intHeader(answer.headers, "X-RateLimit-Remaining"),
            resetSeconds: intHeader(answer.headers, "X-RateLimit-Reset"),
          };
          if (answer.status < 300) return dataOf<T>(call, answer);
          const e = errorOf(answer, key);
          retryAfterMs = e.retryAfterMs;
          if (answer.status >= 500 && e.name === "PaygateError") {
            // A proxy's page, not paygate's answer: the request may have been
            // processed, so it is retried with the same key like a dropped
            // connection, and ends the same way.
            last = new TransportError(call.method, call.path, key, attempt, new LostAnswerError(answer.status, info.requestId));
            retry = !options.signal?.aborted;
          } else {
            last = e;
            retry =
              e.status === 429 ||
              e.status === 503 ||
              // Only the in-flight conflict carries Retry-After; a key reused
              // with another body never succeeds.
              (e.status === 409 && e.name === ErrorName.DuplicateRequest && e.retryAfterMs > 0);
          }
        }
        if (!retry || attempt > this.#maxRetries) throw last;
        const wait = Math.max(this.#backoff(attempt, retryAfterMs), retryAfterMs);
        if (deadline !== undefined && Date.now() + wait > deadline) throw last; // the retry could not start in time
        try {
          await this.#sleep(wait, options.signal);
        } catch {
          throw last;
        }
      }
    } finally {
      options.onResponse?.({ ...info, rateLimit: { ...info.rateLimit } });
    }
  }

  /** Makes one attempt; rejects when no complete answer arrived. */
  async #send(
    target: string,
    method: string,
    headers: Record<string, string>,
    payload: string | undefined,
    signal: AbortSignal | undefined,
    deadline: number | undefined,
  ): Promise<Answer> {
    const signals = [AbortSignal.timeout(this.#timeoutMs)];
    if (signal) signals.push(signal);
    if (deadline !== undefined) signals.push(AbortSignal.timeout(Math.max(deadline - Date.now(), 0)));
    const init: RequestInit = { method, headers, signal: AbortSignal.any(signals), redirect: "manual" };
    if (payload !== undefined) init.body = payload;
    const res = await this.#fetch(target, init);
    const body = await res.arrayBuffer();
    if (body.byteLength > MAX_ANSWER) throw new Error(`the answer is larger than ${MAX_ANSWER} bytes`);
    return { status: res.status, headers: res.headers, body: new TextDecoder().decode(body) };
  }
}

/** One attempt's answer, read whole. */
interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** The data of a 2xx answer. */
function dataOf<T>(call: Call, answer: Answer): T {
  if (call.method === "DELETE" && answer.body === "") return undefined as T;
  let env: { data?: unknown };
  try {
    env = JSON.parse(answer.body) as { data?: unknown };
  } catch {
    env = {};
  }
  if (env === null || typeof env !== "object" || !("data" in env)) {
    throw new Error(`paygate client: ${call.method} ${call.path} answered ${answer.status} with a body that is not the API's envelope`);
  }
  return env.data as T;
}

/**
 * Reads an error answer; a body that is not the envelope (a proxy's page) gives
 * a PaygateError with the status only, named "PaygateError" (a 5xx one is a
 * lost answer: #call turns it into a TransportError).
 */
function errorOf(answer: Answer, key: string | undefined): PaygateError {
  let body: ErrorBody = { status: answer.status, name: "", message: `HTTP ${answer.status}` };
  try {
    const env = JSON.parse(answer.body) as { error?: ErrorBody };
    if (env && typeof env.error === "object" && env.error !== null && typeof env.error.name === "string") body = env.error;
  } catch {
    // not JSON: keep the status
  }
  return new PaygateError(
    { ...body, status: answer.status },
    {
      requestId: answer.headers.get("X-Request-Id") ?? undefined,
      idempotencyKey: key,
      retryAfterMs: retryAfterMs(answer.headers.get("Retry-After"), Date.now()),
    },
  );
}

/** Reads Retry-After, delay seconds or an HTTP date, in milliseconds; 0 when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number {
  if (!value) return 0;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(date - now, 0);
}

function intHeader(headers: Headers, name: string): number {
  const n = Number.parseInt(headers.get(name) ?? "", 10);
  return Number.isNaN(n) ? 0 : n;
}

/** Escapes one id of a path; an empty id is refused before any request, since the path would name another resource. */
function pathId(kind: string, id: string): string {
  if (!id) throw new TypeError(`paygate client: the ${kind} id is empty`);
  return encodeURIComponent(id);
}

/** Waits ms, or rejects when signal aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
