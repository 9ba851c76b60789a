package paygate

import (
	"fmt"
	"log/slog"
)

// PAN is a full card number. It redacts itself in every format and log so
// that a mistaken %v or slog attribute cannot leak it. Use Reveal only on the
// path that hands the number to a provider.
type PAN string

// String returns a fixed placeholder, never the number.
func (PAN) String() string { return "[redacted]" }

// GoString returns a fixed placeholder, never the number.
func (PAN) GoString() string { return "[redacted]" }

// Format prints a fixed placeholder for every verb.
func (PAN) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

// LogValue keeps the number out of structured logs.
func (PAN) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalText refuses to serialize the number by accident.
func (PAN) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Reveal returns the digits. Call it only where the number must leave the
// process for a provider.
func (p PAN) Reveal() string { return string(p) }

// Last4 returns the last four digits, or "" if the number is shorter.
func (p PAN) Last4() string {
	if len(p) < 4 {
		return ""
	}
	return string(p[len(p)-4:])
}

// CVV is a card verification value, redacted like PAN. It is never stored.
type CVV string

// String returns a fixed placeholder.
func (CVV) String() string { return "[redacted]" }

// GoString returns a fixed placeholder.
func (CVV) GoString() string { return "[redacted]" }

// Format prints a fixed placeholder for every verb.
func (CVV) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

// LogValue keeps the value out of structured logs.
func (CVV) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalText refuses to serialize the value by accident.
func (CVV) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Reveal returns the digits, for the provider call only.
func (c CVV) Reveal() string { return string(c) }

// Card is a full card as submitted, alive only for the duration of one
// request. It is never stored.
type Card struct {
	Number     PAN
	ExpMonth   int // 1..12
	ExpYear    int // four digits, 20YY
	CVV        CVV
	HolderName string
}

// CardSummary is what a payment keeps of its card: nothing that allows a
// charge.
type CardSummary struct {
	Brand       string // visa, mastercard, amex, discover, jcb, diners, unionpay, unknown
	Last4       string
	ExpMonth    int
	ExpYear     int
	HolderName  string
	Fingerprint string // keyed hash of the number (hex), to recognise a card without storing it
}
