// The requests and answers of /v1. Amounts are decimal strings ("10.50",
// "100" for JPY), as the API takes and shows them: at most two decimals, no
// more than the currency has; the client never turns them into numbers.
// Times are ISO 8601 strings in UTC with milliseconds.

/** A payment's status. `created`: stored, the provider's answer not known yet (a create answered 202). */
export type PaymentStatus =
  | "created"
  | "captured"
  | "authorized"
  | "pending_3ds"
  | "pending_consent"
  | "failed"
  | "voided";

/** A refund's status: created, then pending, then succeeded or failed. */
export type RefundStatus = "created" | "pending" | "succeeded" | "failed";

/** A card's details, sent with a payment. */
export interface Card {
  /** 13 to 19 digits. */
  number: string;
  /** "01" to "12". */
  expiryMonth: string;
  /** Two digits: "30" is 2030. */
  expiryYear: string;
  /** 3 digits, 4 for American Express. */
  cvv: string;
  holderName: string;
}

/** The cardholder's billing details. `state` is required for US and CA. */
export interface Billing {
  firstName?: string | undefined;
  lastName?: string | undefined;
  email: string;
  /** With country code, 5 to 32 characters. */
  phone: string;
  /** ISO 3166-1 alpha-2. */
  country: string;
  address: string;
  addressLine2?: string | undefined;
  city: string;
  postalCode: string;
  state?: string | undefined;
  /** IPv4; default: the address of the request. */
  ipAddress?: string | undefined;
  /** YYYY-MM-DD. */
  dob?: string | undefined;
  gender?: "M" | "F" | undefined;
}

/** A payment to create: `card` for a card payment (the default), `storedCardId` for a stored_card one, `token` for a token one. */
export interface PaymentParams {
  amount: string;
  currency: string;
  paymentMethod?: "card" | "stored_card" | "token" | undefined;
  /** Your own id of the customer (its externalId): the gateway finds the customer, or creates it. */
  customerId: string;
  card?: Card | undefined;
  storedCardId?: string | undefined;
  /** A card token ("tok_…", createToken or the card fields) of the merchant and mode: it pays once, within 15 minutes. */
  token?: string | undefined;
  billing?: Billing | undefined;
  /** Your reference of the payment, for lookupPayment. */
  merchantRef?: string | undefined;
  /** Where the customer's browser goes after 3-D Secure. */
  returnUrl?: string | undefined;
  deviceFingerprint?: string | undefined;
  /** Stored with the payment, not sent to providers: at most 50 keys of 1 to 40 characters, 8 KiB as JSON. */
  metadata?: Record<string, unknown> | undefined;
  /** Store the card for the customer once the payment is captured or authorized. */
  saveCard?: boolean | undefined;
}

/** Where to send the customer's browser for 3-D Secure. */
export interface ThreeDsData {
  redirectUrl: string;
  method: "GET" | "POST";
  /** The form's fields, for POST. */
  parameters: Record<string, string>;
}

/** The answer of createPayment. */
export interface PaymentResult {
  id: string;
  /** captured, authorized, pending_3ds, or created (outcome not known yet: HTTP 202). */
  status: PaymentStatus;
  amount: string;
  currency: string;
  /** The provider the payment was sent to. */
  provider: string | null;
  threeDsRequired: boolean;
  threeDsData: ThreeDsData | null;
  /** The card stored by saveCard, when it was. */
  storedCardId?: string | undefined;
  createdAt: string;
}

/** A payment's record. */
export interface Payment {
  id: string;
  merchantId: string;
  /** The customer's id in the gateway, not its externalId. */
  customerId: string;
  providerId: string | null;
  status: PaymentStatus;
  amount: string;
  currency: string;
  paymentMethod: "card" | "stored_card";
  merchantRef: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  declineCode: string | null;
  /** Written with the currency's decimals ("0.00", "10.50", "0" for JPY). */
  amountCaptured: string;
  /** Written with the currency's decimals. */
  amountRefunded: string;
  storedCardId?: string | undefined;
  createdAt: string;
  updatedAt: string;
}

/** A capture of an authorized payment: `amount` captures that much (at most the authorized amount); none captures it all. */
export interface CaptureParams {
  amount?: string | undefined;
}

/** A refund to create. */
export interface RefundParams {
  transactionId: string;
  amount: string;
  currency: string;
  /** At most 500 characters. */
  reason?: string | undefined;
}

/** A refund's record. Webhooks tell each change of its status. */
export interface Refund {
  id: string;
  transactionId: string;
  amount: string;
  currency: string;
  status: RefundStatus;
  reason?: string | undefined;
  /** Why a failed refund failed. */
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Creates a customer, or updates the one with the same externalId: `email` and `metadata`, when given, replace the stored values. */
export interface CustomerParams {
  /** Your id of the customer, 1 to 255 characters. */
  externalId: string;
  email?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** A customer's record. */
export interface Customer {
  id: string;
  externalId: string;
  email?: string | undefined;
  metadata: Record<string, unknown>;
  createdAt: string;
}

/** A card to store for a customer: a card without a CVV, which is never stored. */
export interface StoredCardParams {
  number: string;
  expiryMonth: string;
  expiryYear: string;
  holderName: string;
}

/** A stored card as the API shows it: never more of the number than its last four digits. */
export interface StoredCard {
  id: string;
  customerId: string;
  brand: "visa" | "mastercard" | "amex" | "discover" | "jcb" | "diners" | "unionpay" | "unknown";
  last4: string;
  expiryMonth: string;
  expiryYear: string;
  holderName: string;
  createdAt: string;
}

/** What a call's last answer said besides its body (CallOptions.onResponse). */
export interface ResponseInfo {
  /** The HTTP status; 0 when no answer came. */
  status: number;
  /** The answer's X-Request-Id. */
  requestId: string | undefined;
  /** The Idempotency-Key the call sent (POST only). */
  idempotencyKey: string | undefined;
  /** True when the gateway answered with the stored answer of an earlier request with the same key. */
  replayed: boolean;
  /** The requests the call sent, retries included. */
  attempts: number;
  /** The key's budget, from the X-RateLimit-* headers. */
  rateLimit: { limit: number; remaining: number; resetSeconds: number };
}

/** A single-use card token (POST /v1/tokens): never more of the card than its brand, last four and expiry. */
export interface CardToken {
  /** "tok_…": the `token` of a payment with `paymentMethod: "token"`. */
  id: string;
  card: {
    brand: StoredCard["brand"];
    last4: string;
    expiryMonth: string;
    expiryYear: string;
  };
  expiresAt: string;
  used: boolean;
}
