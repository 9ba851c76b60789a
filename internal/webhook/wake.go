package webhook

import (
	"context"

	"github.com/paygate/paygate/internal/paygate"
)

// WakeOnEvents returns st with its event-writing methods (TransitionPayment,
// CreateRefund, TransitionRefund, and the 3-D Secure challenge's
// CreateThreeDSChallenge and FinishThreeDSChallenge) calling wake after a commit that wrote
// events, so that the local dispatcher sends them at once instead of at its
// next poll. Every other method is st's own; events written elsewhere (or
// on another node) go out at the next poll.
func WakeOnEvents(st paygate.Store, wake func()) paygate.Store {
	return wakingStore{Store: st, wake: wake}
}

type wakingStore struct {
	paygate.Store
	wake func()
}

func (s wakingStore) TransitionPayment(ctx context.Context, t paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	err := s.Store.TransitionPayment(ctx, t, events, done)
	s.woke(err, events)
	return err
}

func (s wakingStore) CreateRefund(ctx context.Context, r paygate.Refund, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	err := s.Store.CreateRefund(ctx, r, events, done)
	s.woke(err, events)
	return err
}

func (s wakingStore) TransitionRefund(ctx context.Context, t paygate.RefundTransition, events []paygate.Event) error {
	err := s.Store.TransitionRefund(ctx, t, events)
	s.woke(err, events)
	return err
}

// The 3-D Secure writes (issue 4): a challenge's completion or expiry
// writes payment.captured / payment.failed.

func (s wakingStore) CreateThreeDSChallenge(ctx context.Context, c paygate.ThreeDSChallenge, t paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	err := s.Store.CreateThreeDSChallenge(ctx, c, t, events, done)
	s.woke(err, events)
	return err
}

func (s wakingStore) FinishThreeDSChallenge(ctx context.Context, f paygate.ThreeDSFinish) error {
	err := s.Store.FinishThreeDSChallenge(ctx, f)
	s.woke(err, f.Events)
	return err
}

func (s wakingStore) woke(err error, events []paygate.Event) {
	if err == nil && len(events) > 0 {
		s.wake()
	}
}
