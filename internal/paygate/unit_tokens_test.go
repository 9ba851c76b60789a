package paygate

import "testing"

// TestOnlyCardTokens: only a unit of token inserts may skip its flush; a
// unit that also inserts a payment (a token payment's: NewPayment and
// TokenUse) or uses a token never does, so the payment's commit is durable
// and carries the token's lazy insert with it.
func TestOnlyCardTokens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ops  []Op
		want bool
	}{
		{"tokens", []Op{CardToken{ID: "tok_a"}, CardToken{ID: "tok_b"}}, true},
		{"token and payment", []Op{CardToken{ID: "tok_a"}, NewPayment{}}, false},
		{"payment and token use", []Op{NewPayment{}, TokenUse{ID: "tok_a"}}, false},
		{"token use", []Op{TokenUse{ID: "tok_a"}}, false},
		{"empty", nil, false},
	} {
		if got := (Unit{Ops: c.ops}).OnlyCardTokens(); got != c.want {
			t.Errorf("%s: OnlyCardTokens %v, want %v", c.name, got, c.want)
		}
	}
}
