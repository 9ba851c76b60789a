package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// CheckSealedSecret refuses to store an endpoint that carries its plain
// signing secret, or no sealed one: stores keep only the vault's seal
// (decisions.md section 15). It guards against a caller that forgot to seal.
func CheckSealedSecret(e paygate.WebhookEndpoint) error {
	if e.Secret != "" {
		return errors.New("store: refusing to store a plain webhook signing secret; seal it with the vault")
	}
	if len(e.SealedSecret) == 0 {
		return errors.New("store: a webhook endpoint needs its sealed signing secret")
	}
	return nil
}

// EndpointStateColumns are the columns of a webhook_endpoints row that
// ScanEndpointState reads, in its order. Both engines store an endpoint
// alike (issue 19): events is a JSON array of event types (PostgreSQL's
// jsonb, SQLite's text; [] means every event, EncodeEndpointEvents), the
// optional times are NULL for none, the seals NULL when absent.
const EndpointStateColumns = `merchant_id, mode, url, secret, events, created_at, updated_at,
	previous_secret, previous_secret_expires_at, disabled_at, secret_sealed, previous_secret_sealed`

// EncodeEndpointEvents returns the stored JSON of an endpoint's event
// types: [] for none, which means every event.
func EncodeEndpointEvents(events []string) (string, error) {
	if events == nil {
		events = []string{}
	}
	raw, err := json.Marshal(events)
	if err != nil {
		return "", fmt.Errorf("encode webhook events: %w", err)
	}
	return string(raw), nil
}

// ScanEndpointState reads a row of EndpointStateColumns.
func ScanEndpointState(row Scanner) (paygate.WebhookEndpointState, error) {
	var r endpointRow
	if err := row.Scan(r.targets()...); err != nil {
		return paygate.WebhookEndpointState{}, err
	}
	return r.state()
}

// endpointRow holds the scanned columns of EndpointStateColumns. Every
// destination accepts NULL, so that the columns of a LEFT JOIN that found
// no endpoint scan too (ScanClaimedDelivery); state refuses a NULL time.
type endpointRow struct {
	e                paygate.WebhookEndpointState
	events           []byte
	created, updated *time.Time
}

func (r *endpointRow) targets() []any {
	e := &r.e
	return []any{OptionalText(&e.MerchantID), OptionalText((*string)(&e.Mode)), OptionalText(&e.URL),
		OptionalText(&e.Secret), &r.events, AtOptional(&r.created), AtOptional(&r.updated),
		OptionalText(&e.PreviousSecret), AtOptional(&e.PreviousSecretExpiresAt), AtOptional(&e.DisabledAt),
		&e.SealedSecret, &e.SealedPreviousSecret}
}

func (r *endpointRow) state() (paygate.WebhookEndpointState, error) {
	e := r.e
	if r.created == nil || r.updated == nil {
		return paygate.WebhookEndpointState{}, errors.New("codec: a stored time is NULL")
	}
	e.CreatedAt, e.UpdatedAt = *r.created, *r.updated
	if err := json.Unmarshal(r.events, &e.Events); err != nil {
		return paygate.WebhookEndpointState{}, fmt.Errorf("decode webhook events of merchant %s (%s): %w", e.MerchantID, e.Mode, err)
	}
	if len(e.Events) == 0 {
		e.Events = nil
	}
	return e, nil
}

// DeliveryColumns are the columns of a webhook_deliveries row that
// ScanDelivery reads, in its order. Both engines store a delivery alike:
// last_attempt_at is NULL before the first attempt; the status is one of
// paygate's delivery statuses (the same CHECK on both).
const DeliveryColumns = `id, event_id, merchant_id, mode, event_type, status, attempts, next_attempt_at,
	last_attempt_at, last_status_code, last_error, created_at, updated_at`

func deliveryTargets(d *paygate.Delivery) []any {
	return []any{&d.ID, &d.EventID, &d.MerchantID, &d.Mode, &d.EventType, &d.Status, &d.Attempts,
		At(&d.NextAttemptAt), AtOptional(&d.LastAttemptAt), &d.LastStatusCode, &d.LastError,
		At(&d.CreatedAt), At(&d.UpdatedAt)}
}

// ScanDelivery reads a row of DeliveryColumns.
func ScanDelivery(row Scanner) (paygate.Delivery, error) {
	var d paygate.Delivery
	if err := row.Scan(deliveryTargets(&d)...); err != nil {
		return paygate.Delivery{}, err
	}
	return d, nil
}

// ScanClaimedDelivery reads a claimed delivery held by lease: a row of
// DeliveryColumns, then its event's payload, then the EndpointStateColumns
// of its (merchant, mode)'s endpoint, all NULL when there is none (a LEFT
// JOIN).
func ScanClaimedDelivery(row Scanner, lease string) (paygate.ClaimedDelivery, error) {
	cd := paygate.ClaimedDelivery{Lease: lease}
	var r endpointRow
	dest := append(deliveryTargets(&cd.Delivery), &cd.Payload)
	if err := row.Scan(append(dest, r.targets()...)...); err != nil {
		return paygate.ClaimedDelivery{}, err
	}
	if cd.Payload == nil {
		cd.Payload = []byte{}
	}
	if r.e.MerchantID == "" {
		return cd, nil // no endpoint
	}
	e, err := r.state()
	if err != nil {
		return paygate.ClaimedDelivery{}, err
	}
	cd.Endpoint = &e
	return cd, nil
}

// WebhookSecretsColumns are the columns of a webhook_endpoints row that
// ScanWebhookSecrets reads, in its order: the plain secrets ("" once
// sealed) and their seals (NULL when absent).
const WebhookSecretsColumns = `merchant_id, mode, secret, secret_sealed, previous_secret, previous_secret_sealed`

// ScanWebhookSecrets reads a row of WebhookSecretsColumns.
func ScanWebhookSecrets(row Scanner) (paygate.WebhookSecrets, error) {
	var w paygate.WebhookSecrets
	if err := row.Scan(&w.MerchantID, &w.Mode, &w.Secret, &w.SealedSecret, &w.PreviousSecret, &w.SealedPreviousSecret); err != nil {
		return paygate.WebhookSecrets{}, err
	}
	return w, nil
}
