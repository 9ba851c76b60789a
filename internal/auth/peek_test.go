package auth

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// peekStore is a fakeStore that also reads idempotency records with keys.
type peekStore struct {
	*fakeStore
	records map[string]paygate.IdempotencyRecord // by Idempotency-Key
}

func (s peekStore) APIKeyAndIdempotency(ctx context.Context, hash []byte, idemKey string) (paygate.APIKey, paygate.IdempotencyRecord, bool, error) {
	k, err := s.APIKeyByHash(ctx, hash)
	if err != nil {
		return paygate.APIKey{}, paygate.IdempotencyRecord{}, false, err
	}
	r, ok := s.records[idemKey]
	return k, r, ok, nil
}

// paymentPeekStore is a fakeStore that also reads payments with keys.
type paymentPeekStore struct {
	*fakeStore
	payments map[string]paygate.Payment // by id
}

func (s paymentPeekStore) APIKeyAndPayment(ctx context.Context, hash []byte, id string) (paygate.APIKey, paygate.Payment, bool, error) {
	k, err := s.APIKeyByHash(ctx, hash)
	if err != nil {
		return paygate.APIKey{}, paygate.Payment{}, false, err
	}
	p, ok := s.payments[id]
	return k, p, ok, nil
}

func TestAuthenticatePayment(t *testing.T) {
	plain := newFakeStore()
	secret := addKey(t, plain, paygate.ModeTest, paygate.KeySecret, nil)
	revoked := addKey(t, plain, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now.Add(-time.Minute)) })
	peeker := paymentPeekStore{fakeStore: plain, payments: map[string]paygate.Payment{"p1": {ID: "p1", Status: paygate.PaymentCaptured}}}

	a := &Authenticator{Store: plain, Clock: fixedClock{now}}
	key, got, err := a.AuthenticatePayment(context.Background(), secret, "p1")
	if err != nil || key.ID == "" || got != nil {
		t.Fatalf("plain store: key %q, payment %v, err %v; want the key and no payment", key.ID, got, err)
	}

	a = &Authenticator{Store: peeker, Clock: fixedClock{now}}
	key, got, err = a.AuthenticatePayment(context.Background(), secret, "p1")
	if err != nil || key.ID == "" || got == nil || got.ID != "p1" {
		t.Fatalf("stored payment: key %q, payment %v, err %v", key.ID, got, err)
	}
	key, got, err = a.AuthenticatePayment(context.Background(), secret, "p2")
	if err != nil || key.ID == "" || got != nil {
		t.Fatalf("unknown payment: key %q, payment %v, err %v", key.ID, got, err)
	}
	// A key that does not authenticate reveals no payment.
	for _, header := range []string{revoked, "smtgw_sk_test_unknownunknownunknownunknownunknown1", ""} {
		_, got, err = a.AuthenticatePayment(context.Background(), header, "p1")
		if paygate.ErrorCode(err) != paygate.CodeUnauthorized || got != nil {
			t.Errorf("header %.20q: payment %v, err %v; want UNAUTHORIZED and no payment", header, got, err)
		}
	}
}

func TestAuthenticatePeek(t *testing.T) {
	plain := newFakeStore()
	secret := addKey(t, plain, paygate.ModeTest, paygate.KeySecret, nil)
	revoked := addKey(t, plain, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now.Add(-time.Minute)) })
	rec := paygate.IdempotencyRecord{Key: "order-1", State: paygate.IdempotencyComplete, StatusCode: 201}
	peeker := peekStore{fakeStore: plain, records: map[string]paygate.IdempotencyRecord{"order-1": rec}}

	// A store that cannot peek: authentication alone, peeked false.
	a := &Authenticator{Store: plain, Clock: fixedClock{now}}
	key, got, peeked, err := a.AuthenticatePeek(context.Background(), secret, "order-1")
	if err != nil || key.ID == "" || got != nil || peeked {
		t.Fatalf("plain store: key %q, record %v, peeked %v, err %v", key.ID, got, peeked, err)
	}

	a = &Authenticator{Store: peeker, Clock: fixedClock{now}}
	key, got, peeked, err = a.AuthenticatePeek(context.Background(), secret, "order-1")
	if err != nil || key.ID == "" || !peeked || got == nil || got.StatusCode != 201 {
		t.Fatalf("stored record: key %q, record %v, peeked %v, err %v", key.ID, got, peeked, err)
	}
	_, got, peeked, err = a.AuthenticatePeek(context.Background(), secret, "order-2")
	if err != nil || !peeked || got != nil {
		t.Fatalf("free key: record %v, peeked %v, err %v", got, peeked, err)
	}
	// A key that does not authenticate reveals no record.
	for _, header := range []string{revoked, "smtgw_sk_test_unknownunknownunknownunknownunknown1", ""} {
		_, got, _, err = a.AuthenticatePeek(context.Background(), header, "order-1")
		if paygate.ErrorCode(err) != paygate.CodeUnauthorized || got != nil {
			t.Errorf("header %.20q: record %v, err %v; want UNAUTHORIZED and no record", header, got, err)
		}
	}
}

// notPeekingStore reads keys but fails the reads alongside them.
type notPeekingStore struct{ *fakeStore }

func (s notPeekingStore) APIKeyAndIdempotency(ctx context.Context, hash []byte, _ string) (paygate.APIKey, paygate.IdempotencyRecord, bool, error) {
	k, err := s.APIKeyByHash(ctx, hash)
	if err != nil {
		return paygate.APIKey{}, paygate.IdempotencyRecord{}, false, err
	}
	return k, paygate.IdempotencyRecord{}, false, paygate.ErrNotPeeked
}

func (s notPeekingStore) APIKeyAndPayment(ctx context.Context, hash []byte, _ string) (paygate.APIKey, paygate.Payment, bool, error) {
	k, err := s.APIKeyByHash(ctx, hash)
	if err != nil {
		return paygate.APIKey{}, paygate.Payment{}, false, err
	}
	return k, paygate.Payment{}, false, paygate.ErrNotPeeked
}

// TestAuthenticateNotPeeked checks that a failed read alongside the key
// neither fails authentication nor overtakes it (decisions §1: 401 first):
// the key authenticates as with a store that cannot peek, or is refused.
func TestAuthenticateNotPeeked(t *testing.T) {
	plain := newFakeStore()
	secret := addKey(t, plain, paygate.ModeTest, paygate.KeySecret, nil)
	revoked := addKey(t, plain, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now.Add(-time.Minute)) })
	a := &Authenticator{Store: notPeekingStore{plain}, Clock: fixedClock{now}}

	key, rec, peeked, err := a.AuthenticatePeek(context.Background(), secret, "order-1")
	if err != nil || key.ID == "" || rec != nil || peeked {
		t.Errorf("idempotency: key %q, record %v, peeked %v, err %v; want the key, not peeked", key.ID, rec, peeked, err)
	}
	key, p, err := a.AuthenticatePayment(context.Background(), secret, "p1")
	if err != nil || key.ID == "" || p != nil {
		t.Errorf("payment: key %q, payment %v, err %v; want the key and no payment", key.ID, p, err)
	}
	if _, _, _, err := a.AuthenticatePeek(context.Background(), revoked, "order-1"); paygate.ErrorCode(err) != paygate.CodeUnauthorized {
		t.Errorf("revoked key, idempotency: err %v, want UNAUTHORIZED", err)
	}
	if _, _, err := a.AuthenticatePayment(context.Background(), revoked, "p1"); paygate.ErrorCode(err) != paygate.CodeUnauthorized {
		t.Errorf("revoked key, payment: err %v, want UNAUTHORIZED", err)
	}
}
