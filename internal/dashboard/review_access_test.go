package dashboard

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// roleless reports every signed-in user with a role no route allows: what
// a role added later, and not yet granted anything, would be.
type roleless struct{ Store }

func (r roleless) SessionByTokenHash(ctx context.Context, h []byte) (paygate.Session, paygate.User, error) {
	s, u, err := r.Store.SessionByTokenHash(ctx, h)
	u.Role = "auditor"
	return s, u, err
}

// The export outside the mode tree checks the role as its twin inside it.
func TestExportOutsideTheModeTreeChecksTheRole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.signedIn()
	s.d = New(Config{Store: roleless{s.d.store}, Payments: s.d.cfg.Payments, Limiter: s.d.cfg.Limiter, Clock: s.clock, Vault: siteVault})
	for _, path := range []string{"/dashboard/payments.csv?mode=test", "/dashboard/test/payments.csv"} {
		if p := b.get(path); p.code != http.StatusForbidden {
			t.Errorf("%s for a role without read access: %d", path, p.code)
		}
	}
}

// failingInvitations fails every read of invitations.
type failingInvitations struct{ Store }

func (failingInvitations) Invitations(context.Context, paygate.InvitationQuery) ([]paygate.Invitation, error) {
	return nil, errors.New("database gone")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestInvitationTokenNotLogged(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	s := newSite(t, func(c *Config) {
		c.Store = failingInvitations{c.Store}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	const token = "Zm9vYmFyLXNlY3JldC1pbnZpdGF0aW9uLXRva2Vu"
	if p := s.browser().get("/dashboard/invite/" + token); p.code != http.StatusInternalServerError {
		t.Fatalf("invite with the store failing: %d", p.code)
	}
	if !strings.Contains(logs.String(), "dashboard request failed") {
		t.Fatalf("nothing logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the invitation token is in the log: %s", logs.String())
	}
}
