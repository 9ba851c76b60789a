package payment

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// Service runs the payment use cases.
type Service struct {
	store   paygate.Store
	router  paygate.Router
	clock   paygate.Clock
	encoder Encoder
	log     *slog.Logger
	// vault seals and opens stored cards (storedcard.go) and keys the
	// payments' card fingerprints.
	vault *vault.Vault
	// requestKeys key the fingerprints of idempotent requests, the sealing
	// master key's first (request.go).
	requestKeys [][]byte
	// ProviderTimeout bounds every provider call.
	providerTimeout time.Duration
	// refundKick wakes the refund worker after a refund is created.
	refundKick chan struct{}
	// threeDS configures 3-D Secure challenges (threeds.go).
	threeDS ThreeDSConfig
	metrics Metrics
	// guard is the card-testing guard (guard.go).
	guard Guard
}

// Config holds what a Service needs.
type Config struct {
	Store  paygate.Store
	Router paygate.Router
	Clock  paygate.Clock
	// Encoder renders the answers stored under idempotency keys. Required.
	Encoder Encoder
	Logger  *slog.Logger
	// ProviderTimeout bounds every provider call; default 30 s.
	ProviderTimeout time.Duration
	// Vault seals and opens stored cards, and its master key is the root of
	// every keyed fingerprint: the payments' card fingerprints and the
	// fingerprints of idempotent requests (decisions §15). Required.
	Vault *vault.Vault
	// ThreeDS configures 3-D Secure challenges; see ThreeDSConfig for the
	// defaults.
	ThreeDS ThreeDSConfig
	// Metrics receives what the use cases did; nil records nothing.
	Metrics Metrics
	// Guard is the card-testing guard (decisions §20); nil guards
	// nothing.
	Guard Guard
}

// New returns a Service. It panics if a required dependency is missing,
// which is a wiring mistake.
func New(cfg Config) *Service {
	if cfg.Store == nil || cfg.Router == nil || cfg.Encoder == nil || cfg.Vault == nil {
		panic("payment.New: Store, Router, Encoder and Vault are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ProviderTimeout <= 0 {
		cfg.ProviderTimeout = 30 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Guard == nil {
		cfg.Guard = noGuard{}
	}
	return &Service{
		store: cfg.Store, router: cfg.Router, clock: cfg.Clock, encoder: cfg.Encoder,
		log: cfg.Logger, providerTimeout: cfg.ProviderTimeout,
		refundKick:  make(chan struct{}, 1),
		vault:       cfg.Vault,
		requestKeys: cfg.Vault.RequestKeys(),
		threeDS:     cfg.ThreeDS.withDefaults(),
		metrics:     cfg.Metrics,
		guard:       cfg.Guard,
	}
}

// providerContext detaches a provider call from the client's request: once a
// payment has been sent to a provider it completes even if the merchant
// hangs up, within the provider deadline.
func (s *Service) providerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.providerTimeout)
}

// asProviderError classifies any error from a provider: non-ProviderError
// errors (a connector bug, a context deadline) count as an unknown outcome
// when the deadline passed, and as a failure otherwise.
func asProviderError(providerID string, err error) *paygate.ProviderError {
	var pe *paygate.ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &paygate.ProviderError{Kind: paygate.ProviderUnknownOutcome, Provider: providerID, Message: "the provider did not answer in time"}
	}
	return &paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: providerID, Message: "the provider call failed"}
}
