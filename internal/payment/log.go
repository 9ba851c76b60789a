package payment

import (
	"log/slog"

	"github.com/paygate/paygate/internal/paygate"
)

const levelInfo = slog.LevelInfo

func strAttr(k, v string) slog.Attr { return slog.String(k, v) }

func attrPayment(p paygate.Payment) slog.Attr {
	return slog.Group("payment", slog.String("id", p.ID), slog.String("merchant", p.MerchantID), slog.String("mode", string(p.Mode)))
}

func levelFor(e *paygate.ProviderError) slog.Level {
	if e.Kind == paygate.ProviderUnavailable {
		return slog.LevelWarn
	}
	return slog.LevelError
}

func kindName(k paygate.ProviderErrorKind) string {
	switch k {
	case paygate.ProviderUnavailable:
		return "unavailable"
	case paygate.ProviderUnknownOutcome:
		return "unknown_outcome"
	default:
		return "failed"
	}
}
