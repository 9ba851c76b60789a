package account

import (
	"net/url"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// Actor is who makes a change, for the audit entry that the *By operations
// write in the same unit as the change: the change and its record commit
// together or not at all.
type Actor struct {
	UserID string // "" for the command line
	Email  string // paygate.AuditActorCLI for the command line
	// RemoteAddr is the client's address; "" for the command line.
	RemoteAddr string
}

// CLI is the actor of every change made through the command line
// (decisions.md section 17).
var CLI = Actor{Email: paygate.AuditActorCLI}

// Entry is the audit entry of a change by a, with a fresh id, to commit in
// the change's unit (after the op that creates the merchant, if any).
func (a Actor) Entry(merchantID string, mode paygate.Mode, action, target, detail string, at time.Time) paygate.AuditEntry {
	return paygate.AuditEntry{
		ID: id.New(), MerchantID: merchantID, Mode: mode,
		UserID: a.UserID, Email: a.Email, RemoteAddr: a.RemoteAddr,
		Action: action, Target: target, Detail: detail, CreatedAt: at,
	}
}

// AuditURL is how an endpoint URL is named in the audit log: without a
// password it may carry.
func AuditURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Redacted()
}
