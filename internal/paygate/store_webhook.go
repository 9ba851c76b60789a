package paygate

import (
	"context"
	"time"
)

// WebhookStore is the part of Store for webhook deliveries (issue 3): endpoints' deliveries, attempts and claims.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
//
// Deliveries are born in the same transaction as their event: inserting an
// event (Commit, or any other
// method that writes events) also inserts one pending delivery when the
// event's (merchant, mode) has an endpoint that is enabled and subscribed to
// the event's type. No endpoint means no delivery and no error. Ping events
// are delivered only through WebhookPing.
type WebhookStore interface {
	// WebhookEndpointState returns the endpoint of (merchant, mode) with its
	// previous secret and whether it is disabled, or NOT_FOUND.
	WebhookEndpointState(ctx context.Context, merchantID string, mode Mode) (WebhookEndpointState, error)

	// ClaimDeliveries claims up to c.Limit pending deliveries that are due at
	// c.Now, of any merchant, soonest due first, for one attempt each: every
	// claimed delivery has its Attempts incremented (the number of the
	// attempt about to be made) and is leased with c.Lease until
	// c.LeaseUntil, when it becomes due again if no DeliveryFinish of it
	// was committed (the claimer crashed). A delivery that has had no attempt yet
	// is due only once its NextAttemptAt is at or before c.FirstDue as well.
	// Concurrent claims, from any number of nodes, never claim one delivery
	// twice within a lease. A delivery is not claimed while another
	// delivery of its event is in flight, or is due as well and older (an
	// original and its resend go one at a time). A Limit <= 0 claims
	// nothing.
	ClaimDeliveries(ctx context.Context, c DeliveryClaim) ([]ClaimedDelivery, error)
	// Deliveries lists deliveries of q.MerchantID, newest first (CreatedAt,
	// then insertion), filtered by q's optional fields. A q.Limit <= 0
	// means no limit. DeliveryByID reads one by its id.
	Deliveries(ctx context.Context, q DeliveryQuery) ([]Delivery, error)
	// DeliveryAttempts lists the recorded attempts of a delivery of
	// (merchant, mode), first attempt first; NOT_FOUND when the delivery
	// does not exist for them.
	DeliveryAttempts(ctx context.Context, merchantID string, mode Mode, deliveryID string) ([]DeliveryAttempt, error)

	// ResendEvent is EventResend for the operator, who names an event of
	// any merchant by its id alone: it inserts a new pending delivery, due
	// at at, of the event eventID to its (merchant, mode)'s endpoint, and
	// returns it (the caller learns the event's merchant and mode from it).
	// NOT_FOUND when the event or the endpoint does not exist;
	// ErrStateConflict when the endpoint is disabled.
	ResendEvent(ctx context.Context, eventID, deliveryID string, at time.Time) (Delivery, error)
	// Events lists the events of (q.MerchantID, q.Mode), oldest first
	// (events of one instant in the order they were written), those of one
	// payment and of its refunds when q.PaymentID is set (an unknown
	// payment has none). A q.Limit <= 0 means no limit.
	Events(ctx context.Context, q EventQuery) ([]Event, error)

	// WebhookSecrets lists the stored secrets of up to limit endpoints of
	// any merchant whose (merchant id, mode) comes after (afterMerchant,
	// afterMode), in that order. It serves the conversion of plain secrets
	// at startup, `paygate vault rewrap` and the count of the keys that
	// seal them (webhook.SecretKeyIDs) only. A limit <= 0 means no
	// limit.
	WebhookSecrets(ctx context.Context, afterMerchant string, afterMode Mode, limit int) ([]WebhookSecrets, error)
}

// WebhookSecrets are the stored secrets of one endpoint: the sealed ones,
// and the plain ones of a row written before secrets were sealed ("" once
// converted).
type WebhookSecrets struct {
	MerchantID           string
	Mode                 Mode
	Secret               string
	SealedSecret         []byte
	PreviousSecret       string
	SealedPreviousSecret []byte
}

// WebhookSecretOverlap is how long a rotated-out webhook secret keeps
// signing deliveries beside the new one, so that receivers can switch
// without losing a delivery.
const WebhookSecretOverlap = 24 * time.Hour

// WebhookEndpointState is an endpoint with what delivery needs beyond its
// configuration.
type WebhookEndpointState struct {
	WebhookEndpoint
	// PreviousSecret is the secret the last rotation replaced; "" when none.
	// It signs deliveries too until PreviousSecretExpiresAt. Like Secret it
	// is kept sealed, in SealedPreviousSecret.
	PreviousSecret          string
	SealedPreviousSecret    []byte
	PreviousSecretExpiresAt *time.Time
	// DisabledAt is when the receiver answered 410 Gone; nil while enabled.
	// A disabled endpoint gets no delivery until it is set again.
	DisabledAt *time.Time
}

// Secrets returns the secrets that sign a delivery at t: the current one,
// then the previous one while it is still valid.
func (e WebhookEndpointState) Secrets(t time.Time) []string {
	s := []string{e.Secret}
	if e.PreviousSecret != "" && e.PreviousSecretExpiresAt != nil && t.Before(*e.PreviousSecretExpiresAt) {
		s = append(s, e.PreviousSecret)
	}
	return s
}

// Subscribed reports whether the endpoint receives events of the type.
func (e WebhookEndpoint) Subscribed(t EventType) bool {
	if len(e.Events) == 0 {
		return true
	}
	for _, s := range e.Events {
		if s == string(t) {
			return true
		}
	}
	return false
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// The delivery statuses: pending until a 2xx answer (succeeded) or until
// the last attempt of the retry schedule failed (failed).
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// Valid reports whether s is a delivery status.
func (s DeliveryStatus) Valid() bool {
	return s == DeliveryPending || s == DeliverySucceeded || s == DeliveryFailed
}

// Delivery is one event on its way to its (merchant, mode)'s endpoint. An
// event has one delivery per subscribed endpoint at the time of the event,
// plus one per resend; all carry the event's id as webhook-id.
type Delivery struct {
	ID         string
	EventID    string
	MerchantID string
	Mode       Mode
	EventType  EventType
	Status     DeliveryStatus
	// Attempts counts the attempts started, including one in flight.
	Attempts int
	// NextAttemptAt is when a pending delivery is due: the next attempt, or
	// the end of the lease of the attempt in flight.
	NextAttemptAt time.Time
	// The outcome of the last finished attempt: HTTP status (0 when there
	// was no answer) and error ("" on success).
	LastAttemptAt  *time.Time
	LastStatusCode int
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// DeliveryAttempt is one POST of a delivery.
type DeliveryAttempt struct {
	DeliveryID string
	Number     int    // 1 for the first attempt
	URL        string // where it was sent
	StartedAt  time.Time
	StatusCode int // 0 when no HTTP answer came
	Latency    time.Duration
	Response   []byte // the first KiB of the answer's body (stores keep at most MaxAttemptResponse bytes)
	Error      string // "" when the answer was 2xx
	// PrivateAddress says whether the address the attempt connected to is
	// one the address guard refuses (loopback, private, link-local,
	// multicast, unspecified); nil when unknown (no connection, or recorded
	// before it was recorded). With the guard on, the answer of such an
	// attempt is never shown (decisions.md section 15).
	PrivateAddress *bool
}

// MaxAttemptResponse is how much of an endpoint's answer an attempt keeps
// and the dashboard and command line show at most: 1 KiB (decisions.md
// section 15).
const MaxAttemptResponse = 1024

// DeliveryClaim asks ClaimDeliveries for due deliveries.
type DeliveryClaim struct {
	Now        time.Time
	FirstDue   time.Time // Now minus the wait before a first attempt
	Lease      string    // a fresh random token naming this claim
	LeaseUntil time.Time
	Limit      int
}

// ClaimedDelivery is a delivery claimed for one attempt, with what the
// attempt needs.
type ClaimedDelivery struct {
	Delivery Delivery // Attempts is the number of this attempt
	Lease    string
	Payload  []byte // the event's body
	// Endpoint is the (merchant, mode)'s endpoint as it is now; nil when
	// there is none.
	Endpoint *WebhookEndpointState
}

// DeliveryFinish is the outcome of a claimed delivery's attempt, and the
// unit operation that records it (and moves the delivery to Status):
// pending again until NextAttemptAt, succeeded or failed. With
// DisableEndpoint it also disables the delivery's endpoint and fails its
// other pending deliveries that are not leased at At. When Status is
// succeeded, every other delivery of the same event that is still pending
// (leased or not) ends as succeeded in the same unit: the endpoint has the
// event, and no claim after the commit sends it again (decisions.md
// section 15: a successful resend ends the original). It fails the unit
// with ErrStateConflict when the lease is no longer held (it expired and
// another claim took the delivery), and with NOT_FOUND when the delivery
// does not exist.
type DeliveryFinish struct {
	DeliveryID string
	Lease      string
	At         time.Time
	// Attempt is the request made; nil when none was (the endpoint was gone
	// or disabled), and then Error says why.
	Attempt       *DeliveryAttempt
	Error         string
	Status        DeliveryStatus
	NextAttemptAt time.Time // when Status is pending
	// DisableEndpoint disables the endpoint (the receiver answered 410).
	DisableEndpoint bool
}

func (DeliveryFinish) unitOp() {}

// WebhookSecretsReplacement is the unit operation that replaces the stored
// secrets of the endpoint of (From.MerchantID, From.Mode) by To's sealed
// ones, and empties both plain columns, if the row still holds exactly
// From's four values (compare and set: two nodes converting at once, or a
// rotation meanwhile, cannot lose a secret). It fails the unit with
// ErrStateConflict when the row changed or is gone.
type WebhookSecretsReplacement struct {
	From WebhookSecrets
	To   WebhookSecrets
}

func (WebhookSecretsReplacement) unitOp() {}

// WebhookEndpointConfig is the unit operation that creates or replaces the
// endpoint of (Endpoint.MerchantID, Endpoint.Mode), keeping its secret and
// CreatedAt unless RotateSecret is true (Endpoint.SealedSecret is used when
// a new secret is needed), and enables it (again). On a rotation of an
// existing endpoint the replaced secret stays valid, and keeps signing
// deliveries beside the new one, until PreviousUntil. A secret must be
// given sealed, never in plain text. It fails the unit with NOT_FOUND when
// the merchant does not exist. A rotation never copies a plain secret: it
// fails the unit with ErrStateConflict when the row still holds its current
// secret in plain text (written before secrets were sealed); convert it
// first (webhook.SealStoredSecrets). Read the stored endpoint with
// WebhookEndpointState.
type WebhookEndpointConfig struct {
	Endpoint      WebhookEndpoint
	RotateSecret  bool
	PreviousUntil time.Time
}

func (WebhookEndpointConfig) unitOp() {}

// WebhookPing is the unit operation that inserts the ping event Event and
// its pending delivery DeliveryID, due at Event.CreatedAt. It fails the
// unit with NOT_FOUND when (Event.MerchantID, Event.Mode) has no endpoint,
// and with ErrStateConflict when it is disabled.
type WebhookPing struct {
	Event      Event
	DeliveryID string
}

func (WebhookPing) unitOp() {}

// EventResend is the unit operation that inserts a new pending delivery
// DeliveryID, due at At, of the event EventID of (MerchantID, Mode) to
// their endpoint, whether or not the endpoint subscribes to the event's
// type. The delivery carries the event's id, so the receiver sees the same
// webhook-id again. It fails the unit with NOT_FOUND when the event does
// not exist for (MerchantID, Mode) or they have no endpoint, and with
// ErrStateConflict when the endpoint is disabled.
type EventResend struct {
	MerchantID string
	Mode       Mode
	EventID    string
	DeliveryID string
	At         time.Time
}

func (EventResend) unitOp() {}

// DeliveryQuery selects deliveries of one merchant. Empty fields do not
// filter.
type DeliveryQuery struct {
	MerchantID string
	Mode       Mode
	Status     DeliveryStatus
	EventID    string
	// EventType selects the deliveries of events of one type.
	EventType EventType
	// PaymentID selects the deliveries of the events of a payment and of
	// its refunds; it needs Mode (without it nothing matches).
	PaymentID string
	// ID selects one delivery.
	ID string
	// EventAllFailed selects the deliveries of events none of whose
	// deliveries is anything but failed: the events a "resend all failed"
	// sends again (an event resent since has a delivery pending or done).
	EventAllFailed bool
	Limit          int
}

// DeliveryByID returns the delivery of (merchant, mode) with the id, read
// with st.Deliveries, or NOT_FOUND.
func DeliveryByID(ctx context.Context, st WebhookStore, merchantID string, mode Mode, id string) (Delivery, error) {
	ds, err := st.Deliveries(ctx, DeliveryQuery{MerchantID: merchantID, Mode: mode, ID: id, Limit: 1})
	if err != nil {
		return Delivery{}, err
	}
	if len(ds) == 0 {
		return Delivery{}, Errorf(CodeNotFound, "", "No such delivery.")
	}
	return ds[0], nil
}

// EventQuery selects events of one merchant and mode.
type EventQuery struct {
	MerchantID string
	Mode       Mode
	// PaymentID selects the events of one payment and of its refunds
	// (which carry the payment's id); "" selects every event.
	PaymentID string
	// ID selects one event.
	ID string
	// CreatedFrom (inclusive) and CreatedBefore (exclusive) bound
	// CreatedAt when set.
	CreatedFrom, CreatedBefore time.Time
	Limit                      int
}
