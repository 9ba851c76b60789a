package codec

import (
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// OriginsText is the merchant_origins.origins value of a list of
// normalized origins: separated by single spaces ("" for none). A
// normalized origin never holds a space (paygate.NormalizeOrigin).
func OriginsText(origins []string) string { return strings.Join(origins, " ") }

// Origins reads a merchant_origins.origins value; none is an empty,
// non-nil slice.
func Origins(text string) []string {
	out := strings.Fields(text)
	if out == nil {
		out = []string{}
	}
	return out
}

// OriginsArgs are a change's values of the columns merchant_id, mode,
// origins, updated_at, in that order, with the time as each engine stores
// it (at).
func OriginsArgs(c paygate.OriginsChange, at any) []any {
	return []any{c.MerchantID, string(c.Mode), OriginsText(c.Origins), at}
}
