package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// dashboardCases covers paygate.DashboardStore: users, sessions, the audit
// log, key usage, and the dashboard's read models.
func dashboardCases() []testCase {
	return []testCase{
		{"Users", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", at(time.Minute))
			must(t, commit(ctx(t), s, u))
			got, err := s.UserByEmail(ctx(t), "ada@example.com")
			must(t, err)
			equal(t, "user", u, got)

			// Emails are unique across merchants.
			other := newMerchant(t, s, base)
			wantIs(t, commit(ctx(t), s, userValue(other, "ada@example.com", at(time.Minute))), paygate.ErrConflict)
			wantIs(t, commit(ctx(t), s, userValue(f, "ada@example.com", at(time.Minute))), paygate.ErrConflict)
			dup := userValue(f, "other@example.com", at(time.Minute))
			dup.ID = u.ID
			wantIs(t, commit(ctx(t), s, dup), paygate.ErrConflict)

			ghost := userValue(f, "ghost@example.com", at(time.Minute))
			ghost.MerchantID = newID()
			wantNotFound(t, commit(ctx(t), s, ghost))
			_, err = s.UserByEmail(ctx(t), "ghost@example.com")
			wantNotFound(t, err)
			_, err = s.UserByEmail(ctx(t), "nobody@example.com")
			wantNotFound(t, err)
		}},
		{"Sessions", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			se := sessionValue(u, at(time.Minute))
			must(t, commit(ctx(t), s, se))
			gotS, gotU, err := s.SessionByTokenHash(ctx(t), se.TokenHash)
			must(t, err)
			equal(t, "session", se, gotS)
			equal(t, "session's user", u, gotU)
			_, _, err = s.SessionByTokenHash(ctx(t), randomBytes(32))
			wantNotFound(t, err)
			wantIs(t, commit(ctx(t), s, sessionValue(u, at(time.Minute), func(x *paygate.Session) {
				x.TokenHash = se.TokenHash
			})), paygate.ErrConflict)
			// A session names its user and the user's merchant.
			other := newMerchant(t, s, base)
			wantNotFound(t, commit(ctx(t), s, sessionValue(u, at(time.Minute), func(x *paygate.Session) {
				x.MerchantID = other.merchant.ID
			})))
			wantNotFound(t, commit(ctx(t), s, sessionValue(u, at(time.Minute), func(x *paygate.Session) {
				x.UserID = newID()
			})))

			// Touch moves LastSeenAt forward, never back.
			must(t, commit(ctx(t), s, paygate.SessionTouch{SessionID: se.ID, At: at(5 * time.Minute)}))
			must(t, commit(ctx(t), s, paygate.SessionTouch{SessionID: se.ID, At: at(3 * time.Minute)}))
			gotS, _, err = s.SessionByTokenHash(ctx(t), se.TokenHash)
			must(t, err)
			se.LastSeenAt = at(5 * time.Minute)
			equal(t, "touched session", se, gotS)
			wantNotFound(t, commit(ctx(t), s, paygate.SessionTouch{SessionID: newID(), At: at(5 * time.Minute)}))

			// Revocation keeps the first time.
			must(t, commit(ctx(t), s, paygate.SessionRevocation{SessionID: se.ID, At: at(6 * time.Minute)}))
			must(t, commit(ctx(t), s, paygate.SessionRevocation{SessionID: se.ID, At: at(7 * time.Minute)}))
			gotS, _, err = s.SessionByTokenHash(ctx(t), se.TokenHash)
			must(t, err)
			se.RevokedAt = ptr(at(6 * time.Minute))
			equal(t, "revoked session", se, gotS)
			if gotS.ValidAt(at(6*time.Minute), time.Hour) || !gotS.ValidAt(at(6*time.Minute-time.Microsecond), time.Hour) {
				t.Error("a revoked session is judged valid after its revocation, or invalid before")
			}
			wantNotFound(t, commit(ctx(t), s, paygate.SessionRevocation{SessionID: newID(), At: at(7 * time.Minute)}))
		}},
		{"PasswordChange", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			other := userValue(f, "bob@example.com", base)
			must(t, commit(ctx(t), s, other))
			keep := sessionValue(u, at(time.Minute))
			drop := sessionValue(u, at(time.Minute))
			old := sessionValue(u, at(time.Minute), func(x *paygate.Session) { x.RevokedAt = ptr(at(2 * time.Minute)) })
			bobs := sessionValue(other, at(time.Minute))
			for _, se := range []paygate.Session{keep, drop, old, bobs} {
				must(t, commit(ctx(t), s, se))
			}

			// Another merchant cannot change the user's password.
			stranger := newMerchant(t, s, base)
			wantNotFound(t, commit(ctx(t), s, paygate.PasswordChange{MerchantID: stranger.merchant.ID, UserID: u.ID, PasswordHash: "$argon2id$x", KeepSessionID: "", At: at(time.Hour)}))
			wantNotFound(t, commit(ctx(t), s, paygate.PasswordChange{MerchantID: f.merchant.ID, UserID: newID(), PasswordHash: "$argon2id$x", KeepSessionID: "", At: at(time.Hour)}))
			wantSession(t, s, drop, nil)

			must(t, commit(ctx(t), s, paygate.PasswordChange{MerchantID: f.merchant.ID, UserID: u.ID, PasswordHash: "$argon2id$new", KeepSessionID: keep.ID, At: at(time.Hour)}))
			got, err := s.UserByEmail(ctx(t), u.Email)
			must(t, err)
			u.PasswordHash, u.UpdatedAt = "$argon2id$new", at(time.Hour)
			equal(t, "user with a new password", u, got)
			wantSession(t, s, keep, nil)
			wantSession(t, s, drop, ptr(at(time.Hour)))
			wantSession(t, s, old, ptr(at(2*time.Minute)))
			wantSession(t, s, bobs, nil)

			// "" revokes every session.
			must(t, commit(ctx(t), s, paygate.PasswordChange{MerchantID: f.merchant.ID, UserID: u.ID, PasswordHash: "$argon2id$newer", KeepSessionID: "", At: at(2 * time.Hour)}))
			wantSession(t, s, keep, ptr(at(2*time.Hour)))
			wantSession(t, s, drop, ptr(at(time.Hour)))
			wantSession(t, s, bobs, nil)
		}},
		{"Audit", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			var want []paygate.AuditEntry
			for i, when := range []time.Time{at(time.Minute), at(3 * time.Minute), at(2 * time.Minute), at(2 * time.Minute), at(2 * time.Minute)} {
				a := auditValue(f, paygate.ModeTest, when)
				if i == 1 {
					a.Mode, a.Action, a.UserID, a.Email = "", paygate.AuditSignInFailed, "", "typed@example.com"
				}
				if i == 2 {
					a.Mode = paygate.ModeLive
				}
				must(t, commit(ctx(t), s, a))
				want = append(want, a)
				must(t, commit(ctx(t), s, auditValue(other, paygate.ModeTest, when)))
			}
			sortNewestFirst(want, func(a paygate.AuditEntry) (time.Time, string) { return a.CreatedAt, a.ID })

			all, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
			must(t, err)
			equal(t, "audit log", want, all)
			var paged []paygate.AuditEntry
			var before *paygate.PageCursor
			for range len(want) + 1 {
				page, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID, Before: before, Limit: 2})
				must(t, err)
				if len(page) > 2 {
					t.Fatalf("page of %d entries, want at most 2", len(page))
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				last := page[len(page)-1]
				before = &paygate.PageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			equal(t, "audit log in pages of 2", want, paged)
			none, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: newID()})
			must(t, err)
			if len(none) != 0 {
				t.Errorf("audit log of an unknown merchant: %d entries", len(none))
			}
			wantNotFound(t, commit(ctx(t), s, auditValue(fixture{merchant: paygate.Merchant{ID: newID()}}, paygate.ModeTest, base)))
		}},
		{"RefusedAccountOperationWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			se := sessionValue(u, at(time.Minute))
			must(t, commit(ctx(t), s, se))
			ghost := fixture{merchant: paygate.Merchant{ID: newID()}}
			for _, c := range []struct {
				name    string
				refused paygate.Op
			}{
				{"user of no merchant", userValue(ghost, "ghost@example.com", base)},
				{"session of no user", sessionValue(u, at(time.Minute), func(x *paygate.Session) { x.UserID = newID() })},
				{"touch of no session", paygate.SessionTouch{SessionID: newID(), At: at(time.Hour)}},
				{"revocation of no session", paygate.SessionRevocation{SessionID: newID(), At: at(time.Hour)}},
				{"password of no user", paygate.PasswordChange{MerchantID: f.merchant.ID, UserID: newID(), PasswordHash: "$argon2id$x", At: at(time.Hour)}},
				{"password of another merchant's user", paygate.PasswordChange{MerchantID: ghost.merchant.ID, UserID: u.ID, PasswordHash: "$argon2id$x", At: at(time.Hour)}},
				{"audit of no merchant", auditValue(ghost, paygate.ModeTest, base)},
			} {
				t.Run(c.name, func(t *testing.T) {
					err := commit(ctx(t), s,
						auditValue(f, paygate.ModeTest, at(time.Minute)),
						paygate.SessionTouch{SessionID: se.ID, At: at(time.Hour)},
						paygate.SessionRevocation{SessionID: se.ID, At: at(time.Hour)},
						paygate.PasswordChange{MerchantID: f.merchant.ID, UserID: u.ID, PasswordHash: "$argon2id$changed", At: at(time.Hour)},
						c.refused)
					wantNotFound(t, err)
					entries, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
					must(t, err)
					if len(entries) != 0 {
						t.Errorf("a refused unit wrote audit entries %+v", entries)
					}
					wantSession(t, s, se, nil)
					got, err := s.UserByEmail(ctx(t), u.Email)
					must(t, err)
					equal(t, "user after a refused unit", u, got)
				})
			}
			// A duplicate fails the unit too.
			err := commit(ctx(t), s, auditValue(f, paygate.ModeTest, at(time.Minute)), userValue(f, u.Email, base))
			wantIs(t, err, paygate.ErrConflict)
			entries, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
			must(t, err)
			if len(entries) != 0 {
				t.Errorf("a unit refused on a duplicate wrote audit entries %+v", entries)
			}
		}},
		{"AccountOperationsSeeTheOnesBefore", func(t *testing.T, s paygate.Store) {
			// A user, a session of the user and a password change that
			// keeps it, in one unit.
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			se := sessionValue(u, at(time.Minute))
			other := sessionValue(u, at(time.Minute))
			must(t, commit(ctx(t), s, u, se, other,
				paygate.PasswordChange{MerchantID: f.merchant.ID, UserID: u.ID, PasswordHash: "$argon2id$new", KeepSessionID: se.ID, At: at(time.Hour)}))
			got, err := s.UserByEmail(ctx(t), u.Email)
			must(t, err)
			u.PasswordHash, u.UpdatedAt = "$argon2id$new", at(time.Hour)
			equal(t, "user", u, got)
			wantSession(t, s, se, nil)
			wantSession(t, s, other, ptr(at(time.Hour)))
		}},
		{"APIKeyUsage", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			k, l := f.testKey, f.liveKey
			got, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
			must(t, err)
			if got.LastUsedAt != nil {
				t.Fatalf("a new key has LastUsedAt %v", got.LastUsedAt)
			}
			must(t, commit(ctx(t), s, paygate.APIKeyUsage{Used: nil}))
			must(t, commit(ctx(t), s, paygate.APIKeyUsage{Used: map[string]time.Time{k.ID: at(2 * time.Minute), newID(): at(time.Hour)}}))
			must(t, commit(ctx(t), s, paygate.APIKeyUsage{Used: map[string]time.Time{k.ID: at(time.Minute), l.ID: at(3 * time.Minute)}}))
			byID, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
			must(t, err)
			equal(t, "last used (by id)", ptr(at(2*time.Minute)), byID.LastUsedAt)
			byHash, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{Hash: l.Hash}))
			must(t, err)
			equal(t, "last used (by hash)", ptr(at(3*time.Minute)), byHash.LastUsedAt)
			must(t, commit(ctx(t), s, paygate.APIKeyUsage{Used: map[string]time.Time{k.ID: at(4 * time.Minute)}}))
			keys, err := s.APIKeys(ctx(t), paygate.APIKeyQuery{MerchantID: f.merchant.ID})
			must(t, err)
			for _, key := range keys {
				want := map[string]time.Time{k.ID: at(4 * time.Minute), l.ID: at(3 * time.Minute)}[key.ID]
				equal(t, "last used of "+key.ID, ptr(want), key.LastUsedAt)
			}
		}},
		{"ReserveIdempotencyWithoutAPIKey", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			err := commit(ctx(t), s, paygate.APIKeyRevocation{ID: f.testKey.ID, At: at(time.Minute)})
			must(t, err)
			r := f.reservation(paygate.ModeTest, "dashboard-refund-1", at(time.Hour))
			_, _, err = s.ReserveIdempotency(ctx(t), r)
			wantCode(t, err, paygate.CodeUnauthorized, "")
			// The dashboard reserves without an API key: no key check.
			r.APIKeyID = ""
			rec, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved || rec.State != paygate.IdempotencyInFlight || rec.Key != r.Key {
				t.Fatalf("reserve without an API key = %+v, %v; want a new in-flight record", rec, reserved)
			}
			_, reserved, err = s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if reserved {
				t.Fatal("the key was reserved twice")
			}
		}},
		{"ListPayments", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			// Same external id in another merchant and another mode.
			other.listed(t, paygate.ModeTest, at(time.Minute), "EUR", "shared", paygate.PaymentCaptured)
			f.listed(t, paygate.ModeLive, at(time.Minute), "EUR", "shared", paygate.PaymentCaptured)
			var mine []paygate.Payment
			plan := []struct {
				when     time.Duration
				currency string
				customer string
				status   paygate.PaymentStatus
			}{
				{1, "EUR", "shared", paygate.PaymentCaptured},
				{2, "USD", "shared", paygate.PaymentFailed},
				{2, "EUR", "solo", paygate.PaymentCaptured},
				{2, "EUR", "solo", paygate.PaymentAuthorized},
				{2, "USD", "third", paygate.PaymentCreated},
				{3, "EUR", "third", paygate.PaymentFailed},
				{4, "EUR", "shared", paygate.PaymentCaptured},
			}
			for _, p := range plan {
				mine = append(mine, f.listed(t, paygate.ModeTest, at(p.when*time.Minute), p.currency, p.customer, p.status))
			}
			// A reference reused by three payments (and by one in the
			// other mode), older than the others.
			for _, p := range []struct {
				when     time.Duration
				currency string
				status   paygate.PaymentStatus
			}{{-3, "EUR", paygate.PaymentCaptured}, {-2, "JPY", paygate.PaymentFailed}, {-1, "EUR", paygate.PaymentCaptured}} {
				mine = append(mine, f.listedRef(t, paygate.ModeTest, at(p.when*time.Minute), p.currency, "reuser", p.status, "order-reused"))
			}
			f.listedRef(t, paygate.ModeLive, at(time.Minute), "EUR", "reuser", paygate.PaymentCaptured, "order-reused")
			sortNewestFirst(mine, func(p paygate.Payment) (time.Time, string) { return p.CreatedAt, p.ID })
			q := paygate.PaymentQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest}
			where := func(keep func(p paygate.Payment) bool) []paygate.Payment {
				var out []paygate.Payment
				for _, p := range mine {
					if keep(p) {
						out = append(out, p)
					}
				}
				return out
			}
			listPages(t, s, q, mine, 0)
			listPages(t, s, q, mine, 2)

			byStatus := q
			byStatus.Statuses = []paygate.PaymentStatus{paygate.PaymentFailed}
			listPages(t, s, byStatus, where(func(p paygate.Payment) bool { return p.Status == paygate.PaymentFailed }), 1)
			byStatus.Statuses = []paygate.PaymentStatus{paygate.PaymentCaptured, paygate.PaymentAuthorized, paygate.PaymentCaptured}
			listPages(t, s, byStatus, where(func(p paygate.Payment) bool {
				return p.Status == paygate.PaymentCaptured || p.Status == paygate.PaymentAuthorized
			}), 2)

			byTime := q
			byTime.CreatedFrom, byTime.CreatedBefore = at(2*time.Minute), at(4*time.Minute)
			listPages(t, s, byTime, where(func(p paygate.Payment) bool {
				return !p.CreatedAt.Before(at(2*time.Minute)) && p.CreatedAt.Before(at(4*time.Minute))
			}), 2)

			byCurrency := q
			byCurrency.Currency = "USD"
			listPages(t, s, byCurrency, where(func(p paygate.Payment) bool { return p.Amount.Currency == "USD" }), 0)

			byRef := q
			byRef.MerchantRef = mine[3].MerchantRef
			listPages(t, s, byRef, mine[3:4], 0)

			byCustomer := q
			byCustomer.CustomerID = mine[0].CustomerID // "shared"
			sharedOnly := where(func(p paygate.Payment) bool { return p.CustomerID == mine[0].CustomerID })
			if len(sharedOnly) != 3 {
				t.Fatalf("fixture: %d payments of the shared customer, want 3", len(sharedOnly))
			}
			listPages(t, s, byCustomer, sharedOnly, 2)
			byExternal := q
			byExternal.CustomerExternalID = "shared"
			listPages(t, s, byExternal, sharedOnly, 2)
			byExternal.CustomerExternalID = "nobody"
			listPages(t, s, byExternal, nil, 0)

			// Combinations: the most selective filter leads, the others
			// must still hold.
			reused := q
			reused.MerchantRef = "order-reused"
			isReused := func(p paygate.Payment) bool { return p.MerchantRef == "order-reused" }
			listPages(t, s, reused, where(isReused), 1)
			reused.Statuses = []paygate.PaymentStatus{paygate.PaymentCaptured}
			listPages(t, s, reused, where(func(p paygate.Payment) bool {
				return isReused(p) && p.Status == paygate.PaymentCaptured
			}), 1)
			reused.Statuses = []paygate.PaymentStatus{paygate.PaymentFailed, paygate.PaymentAuthorized}
			listPages(t, s, reused, where(func(p paygate.Payment) bool {
				return isReused(p) && p.Status == paygate.PaymentFailed
			}), 1)
			reused.Statuses = nil
			reused.Currency = "EUR"
			listPages(t, s, reused, where(func(p paygate.Payment) bool { return isReused(p) && p.Amount.Currency == "EUR" }), 1)
			reused.Currency = ""
			reused.CustomerExternalID = "reuser"
			listPages(t, s, reused, where(isReused), 2)
			reused.CustomerExternalID = "shared"
			listPages(t, s, reused, nil, 0)
			reused.CustomerExternalID = ""
			reused.CreatedFrom, reused.CreatedBefore = at(-2*time.Minute), at(-time.Minute)
			listPages(t, s, reused, where(func(p paygate.Payment) bool {
				return isReused(p) && p.CreatedAt.Equal(at(-2*time.Minute))
			}), 1)

			rare := q
			rare.Currency = "JPY"
			listPages(t, s, rare, where(func(p paygate.Payment) bool { return p.Amount.Currency == "JPY" }), 1)
			rare.Statuses = []paygate.PaymentStatus{paygate.PaymentCaptured}
			listPages(t, s, rare, nil, 1)
			usdFailed := q
			usdFailed.Currency = "USD"
			usdFailed.Statuses = []paygate.PaymentStatus{paygate.PaymentFailed, paygate.PaymentCreated}
			listPages(t, s, usdFailed, where(func(p paygate.Payment) bool {
				return p.Amount.Currency == "USD" && (p.Status == paygate.PaymentFailed || p.Status == paygate.PaymentCreated)
			}), 1)
			customerStatus := q
			customerStatus.CustomerExternalID = "shared"
			customerStatus.Statuses = []paygate.PaymentStatus{paygate.PaymentCaptured}
			listPages(t, s, customerStatus, where(func(p paygate.Payment) bool {
				return p.CustomerID == mine[0].CustomerID && p.Status == paygate.PaymentCaptured
			}), 1)

			// A cursor past the end of the dates: every payment of the
			// dates is before it.
			pastEnd := byTime
			pastEnd.After = &paygate.PageCursor{CreatedAt: at(10 * time.Minute), ID: mine[0].ID}
			got, err := s.ListPayments(ctx(t), pastEnd)
			must(t, err)
			if want := where(func(p paygate.Payment) bool {
				return !p.CreatedAt.Before(at(2*time.Minute)) && p.CreatedAt.Before(at(4*time.Minute))
			}); !samePayments(want, got) {
				t.Errorf("dates with a cursor past their end:\n\tgot  %s\n\twant %s", paymentIDs(got), paymentIDs(want))
			}
			// A cursor inside the dates, on the first page.
			inside := byTime
			inside.After = &paygate.PageCursor{CreatedAt: at(3 * time.Minute), ID: ""}
			got, err = s.ListPayments(ctx(t), inside)
			must(t, err)
			if want := where(func(p paygate.Payment) bool {
				return !p.CreatedAt.Before(at(2*time.Minute)) && p.CreatedAt.Before(at(3*time.Minute))
			}); !samePayments(want, got) {
				t.Errorf("dates with a cursor inside them:\n\tgot  %s\n\twant %s", paymentIDs(got), paymentIDs(want))
			}

			combined := q
			combined.Statuses = []paygate.PaymentStatus{paygate.PaymentCaptured, paygate.PaymentFailed}
			combined.Currency = "EUR"
			combined.CustomerExternalID = "shared"
			listPages(t, s, combined, where(func(p paygate.Payment) bool {
				return p.CustomerID == mine[0].CustomerID && p.Amount.Currency == "EUR" &&
					(p.Status == paygate.PaymentCaptured || p.Status == paygate.PaymentFailed)
			}), 1)

			// Isolation: another merchant's, or the other mode's, see only theirs.
			foreign := q
			foreign.MerchantID = other.merchant.ID
			got, err = s.ListPayments(ctx(t), foreign)
			must(t, err)
			if len(got) != 1 || got[0].MerchantID != other.merchant.ID {
				t.Errorf("other merchant's list: %d payments", len(got))
			}
			live := q
			live.Mode = paygate.ModeLive
			live.CustomerExternalID = "shared"
			got, err = s.ListPayments(ctx(t), live)
			must(t, err)
			if len(got) != 1 || got[0].Mode != paygate.ModeLive {
				t.Errorf("live list of the shared customer: %d payments", len(got))
			}
		}},
		{"SearchCustomers", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			upsert := func(f fixture, mode paygate.Mode, external, email string, when time.Time) paygate.Customer {
				t.Helper()
				u := paygate.CustomerUpsert{NewID: newID(), MerchantID: f.merchant.ID, Mode: mode, ExternalID: external, Now: when}
				if email != "" {
					u.Email = &email
				}
				c, err := s.UpsertCustomer(ctx(t), u)
				must(t, err)
				return c
			}
			alice1 := upsert(f, paygate.ModeTest, "alice-1", "", at(time.Minute))
			alice10 := upsert(f, paygate.ModeTest, "alice-10", "", at(2*time.Minute))
			alice2 := upsert(f, paygate.ModeTest, "alice-2", "Alice2@Example.com", at(2*time.Minute))
			carol := upsert(f, paygate.ModeTest, "c-9", "Carol@Example.COM", at(3*time.Minute))
			bob := upsert(f, paygate.ModeTest, "bob", "alice-1", at(4*time.Minute)) // email equal to the text
			upsert(f, paygate.ModeTest, "xalice-1", "", at(5*time.Minute))
			upsert(f, paygate.ModeLive, "alice-3", "carol@example.com", at(time.Minute))
			upsert(other, paygate.ModeTest, "alice-4", "carol@example.com", at(time.Minute))

			q := paygate.CustomerQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest}
			search := func(text string, want ...paygate.Customer) {
				t.Helper()
				sortNewestFirst(want, func(c paygate.Customer) (time.Time, string) { return c.CreatedAt, c.ID })
				q := q
				q.Text = text
				searchPages(t, s, q, want, 0)
				searchPages(t, s, q, want, 1)
			}
			search("alice", alice1, alice10, alice2)
			search("alice-1", alice1, alice10, bob)
			search("carol@example.com", carol)
			search("CAROL@example.com", carol)
			search("c-9", carol)
			search("nobody")
			all, err := s.SearchCustomers(ctx(t), q)
			must(t, err)
			if len(all) != 6 {
				t.Errorf("every customer: %d, want 6", len(all))
			}
			for _, c := range all {
				if c.MerchantID != f.merchant.ID || c.Mode != paygate.ModeTest {
					t.Errorf("customer of another merchant or mode listed: %+v", c)
				}
			}
		}},
		{"EventsOfPayment", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			captured := eventValue(p, paygate.EventPaymentCaptured, "", at(2*time.Minute))
			must(t, createRefund(ctx(t), s, refundValue(p, 100, at(3*time.Minute)), nil, nil))
			refund := refundValue(p, 200, at(4*time.Minute))
			created := eventValue(p, paygate.EventRefundCreated, refund.ID, at(4*time.Minute))
			must(t, createRefund(ctx(t), s, refund, []paygate.Event{created}, nil))
			succeeded := eventValue(p, paygate.EventRefundSucceeded, refund.ID, at(4*time.Minute))
			must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
				ID: refund.ID, MerchantID: refund.MerchantID, Mode: refund.Mode,
				From: paygate.RefundCreated, To: paygate.RefundSucceeded, UpdatedAt: at(4 * time.Minute),
			}, []paygate.Event{succeeded}))
			// The capture event is written late, with an earlier time.
			must(t, createRefund(ctx(t), s, refundValue(p, 1, at(5*time.Minute)), []paygate.Event{captured}, nil))
			// Noise: another payment's event and a ping.
			q := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			f.capture(t, q, at(2*time.Minute))
			f.endpoint(t, paygate.ModeTest)
			_, err := testenv.CreatePing(ctx(t), s, pingValue(f, paygate.ModeTest, at(2*time.Minute)), newID())
			must(t, err)

			got, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, PaymentID: p.ID})
			must(t, err)
			equal(t, "events of the payment", []paygate.Event{captured, created, succeeded}, got)
			for _, probe := range []struct {
				merchantID string
				mode       paygate.Mode
				paymentID  string
			}{
				{newMerchant(t, s, base).merchant.ID, paygate.ModeTest, p.ID},
				{f.merchant.ID, paygate.ModeLive, p.ID},
				{f.merchant.ID, paygate.ModeTest, newID()},
			} {
				got, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: probe.merchantID, Mode: probe.mode, PaymentID: probe.paymentID})
				must(t, err)
				if len(got) != 0 {
					t.Errorf("events of %+v: %d, want none", probe, len(got))
				}
			}
		}},
		{"DeliveriesOfPayment", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			f.endpoint(t, paygate.ModeLive)
			other.endpoint(t, paygate.ModeTest)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			captured := f.capture(t, p, at(2*time.Minute))
			refund := refundValue(p, 200, at(3*time.Minute))
			created := eventValue(p, paygate.EventRefundCreated, refund.ID, at(3*time.Minute))
			must(t, createRefund(ctx(t), s, refund, []paygate.Event{created}, nil))
			resent, err := resendMerchantEvent(ctx(t), s, f.merchant.ID, paygate.ModeTest, captured.ID, newID(), at(5*time.Minute))
			must(t, err)
			// Noise: another payment's, the other mode's, another
			// merchant's, and a ping.
			f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(4*time.Minute))
			f.capture(t, f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(4*time.Minute))
			other.capture(t, other.newPayment(t, paygate.ModeTest, at(time.Minute)), at(4*time.Minute))
			_, err = testenv.CreatePing(ctx(t), s, pingValue(f, paygate.ModeTest, at(4*time.Minute)), newID())
			must(t, err)

			got, err := s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, PaymentID: p.ID})
			must(t, err)
			var events []string
			for _, d := range got {
				events = append(events, d.EventID)
				if d.MerchantID != f.merchant.ID || d.Mode != paygate.ModeTest {
					t.Errorf("delivery of another merchant or mode: %+v", d)
				}
			}
			if want := []string{captured.ID, created.ID, captured.ID}; !slices.Equal(events, want) {
				t.Errorf("deliveries of the payment are of events %v, want %v (newest first)", events, want)
			}
			if len(got) > 0 {
				equal(t, "newest delivery", resent, got[0])
			}
			for _, probe := range []struct {
				merchantID string
				mode       paygate.Mode
				paymentID  string
			}{
				{other.merchant.ID, paygate.ModeTest, p.ID},
				{f.merchant.ID, paygate.ModeLive, p.ID},
				{f.merchant.ID, paygate.ModeTest, newID()},
			} {
				got, err := s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: probe.merchantID, Mode: probe.mode, PaymentID: probe.paymentID})
				must(t, err)
				if got == nil || len(got) != 0 {
					t.Errorf("deliveries of %+v: %v, want none", probe, got)
				}
			}
		}},
		{"PaymentStats", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			day := time.Date(2031, time.March, 14, 0, 0, 0, 0, time.UTC)
			h := day.Add(time.Hour)
			for _, p := range []statSpec{
				{when: h, currency: "EUR", amount: 1000, status: paygate.PaymentCaptured, captured: 1000},
				{when: h.Add(15*time.Minute - time.Microsecond), currency: "EUR", amount: 500, status: paygate.PaymentAuthorized},
				{when: h.Add(5 * time.Minute), currency: "USD", amount: 250, status: paygate.PaymentCaptured, captured: 250},
				{when: h.Add(15 * time.Minute), currency: "EUR", amount: 700, status: paygate.PaymentVoided},
				{when: h.Add(20 * time.Minute), currency: "EUR", amount: 900, status: paygate.PaymentFailed, code: string(paygate.CodeCardDeclined)},
				{when: h.Add(29 * time.Minute), currency: "EUR", amount: 800, status: paygate.PaymentFailed, code: string(paygate.CodeProviderError)},
				{when: h.Add(30 * time.Minute), currency: "EUR", amount: 300, status: paygate.PaymentCreated},
				{when: h.Add(31 * time.Minute), currency: "EUR", amount: 400, status: paygate.PaymentPending3DS},
				// Partly captured: the volume is what was captured.
				{when: h.Add(40 * time.Minute), currency: "EUR", amount: 1000, status: paygate.PaymentCaptured, captured: 600},
				{when: day.Add(24*time.Hour - time.Microsecond), currency: "EUR", amount: 100, status: paygate.PaymentCaptured, captured: 100},
				{when: day.Add(24 * time.Hour), currency: "EUR", amount: 999, status: paygate.PaymentCaptured, captured: 999},    // at to
				{when: day.Add(-time.Microsecond), currency: "EUR", amount: 999, status: paygate.PaymentCaptured, captured: 999}, // before from
			} {
				f.statPayment(t, paygate.ModeTest, p)
			}
			// Noise in the other mode and another merchant.
			noise := statSpec{when: h, currency: "EUR", amount: 5, status: paygate.PaymentCaptured, captured: 5}
			f.statPayment(t, paygate.ModeLive, noise)
			newMerchant(t, s, base).statPayment(t, paygate.ModeTest, noise)

			got, err := s.PaymentStats(ctx(t), f.merchant.ID, paygate.ModeTest, day, day.Add(24*time.Hour))
			must(t, err)
			equal(t, "stats per period", []paygate.PaymentStat{
				{Start: h, Currency: "EUR", Count: 2, Succeeded: 1, Pending: 1, Volume: 1000},
				{Start: h, Currency: "USD", Count: 1, Succeeded: 1, Volume: 250},
				{Start: h.Add(15 * time.Minute), Currency: "EUR", Count: 3, Failed: 2, Declined: 1},
				{Start: h.Add(30 * time.Minute), Currency: "EUR", Count: 3, Succeeded: 1, Pending: 2, Volume: 600},
				{Start: day.Add(24*time.Hour - paygate.StatPeriod), Currency: "EUR", Count: 1, Succeeded: 1, Volume: 100},
			}, got)
			none, err := s.PaymentStats(ctx(t), f.merchant.ID, paygate.ModeTest, day.AddDate(1, 0, 0), day.AddDate(1, 1, 0))
			must(t, err)
			if len(none) != 0 {
				t.Errorf("stats of an empty range: %+v", none)
			}
		}},
		{"ProviderStats", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			h := time.Date(2031, time.March, 14, 10, 0, 0, 0, time.UTC)
			from, to := h, h.Add(time.Hour)
			for _, p := range []statSpec{
				{when: h, status: paygate.PaymentCaptured, captured: 100, provider: "sandbox-a"},
				{when: h.Add(time.Minute), status: paygate.PaymentAuthorized, provider: "sandbox-a"},
				{when: h.Add(2 * time.Minute), status: paygate.PaymentFailed, code: string(paygate.CodeCardDeclined), provider: "sandbox-a"},
				{when: h.Add(3 * time.Minute), status: paygate.PaymentFailed, code: string(paygate.CodeCardDeclined), provider: "sandbox-b"},
				{when: h.Add(5*time.Minute - time.Microsecond), status: paygate.PaymentVoided, provider: "sandbox-b"},
				// Next period: one answered, and payments without an answer
				// or without a provider, which are not attempts.
				{when: h.Add(5 * time.Minute), status: paygate.PaymentFailed, code: string(paygate.CodeProviderError), provider: "sandbox-a"},
				{when: h.Add(6 * time.Minute), status: paygate.PaymentCreated, provider: "sandbox-a"},
				{when: h.Add(7 * time.Minute), status: paygate.PaymentPending3DS, provider: "sandbox-a"},
				{when: h.Add(8 * time.Minute), status: paygate.PaymentFailed, code: string(paygate.CodeProviderError)},
				{when: h.Add(55 * time.Minute), status: paygate.PaymentCaptured, captured: 100, provider: "sandbox-b"},
				{when: to, status: paygate.PaymentCaptured, captured: 100, provider: "sandbox-a"},                          // at to
				{when: from.Add(-time.Microsecond), status: paygate.PaymentCaptured, captured: 100, provider: "sandbox-a"}, // before from
			} {
				p.currency, p.amount = "EUR", 100
				f.statPayment(t, paygate.ModeTest, p)
			}
			// Noise in the other mode and another merchant.
			noise := statSpec{when: h, currency: "EUR", amount: 5, status: paygate.PaymentFailed, code: string(paygate.CodeCardDeclined), provider: "sandbox-a"}
			f.statPayment(t, paygate.ModeLive, noise)
			newMerchant(t, s, base).statPayment(t, paygate.ModeTest, noise)

			got, err := s.ProviderStats(ctx(t), f.merchant.ID, paygate.ModeTest, from, to)
			must(t, err)
			p := paygate.ProviderStatPeriod
			equal(t, "stats per period and provider", []paygate.ProviderStat{
				{Start: h, ProviderID: "sandbox-a", Currency: "EUR", Brand: "visa", Attempts: 3, Approved: 2},
				{Start: h, ProviderID: "sandbox-b", Currency: "EUR", Brand: "visa", Attempts: 2, Approved: 1},
				{Start: h.Add(p), ProviderID: "sandbox-a", Currency: "EUR", Brand: "visa", Attempts: 1, Approved: 0},
				{Start: h.Add(11 * p), ProviderID: "sandbox-b", Currency: "EUR", Brand: "visa", Attempts: 1, Approved: 1},
			}, got)
			none, err := s.ProviderStats(ctx(t), f.merchant.ID, paygate.ModeTest, to.Add(time.Hour), to.Add(2*time.Hour))
			must(t, err)
			if none == nil || len(none) != 0 {
				t.Errorf("stats of an empty range: %+v", none)
			}
		}},
		{"EventResend", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			f.endpoint(t, paygate.ModeLive)
			other.endpoint(t, paygate.ModeTest)
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			theirs := other.capture(t, other.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))

			id := newID()
			got, err := resendMerchantEvent(ctx(t), s, f.merchant.ID, paygate.ModeTest, ev.ID, id, at(2*time.Hour))
			must(t, err)
			equal(t, "resent delivery", paygate.Delivery{
				ID: id, EventID: ev.ID, MerchantID: f.merchant.ID, Mode: paygate.ModeTest, EventType: ev.Type,
				Status: paygate.DeliveryPending, NextAttemptAt: at(2 * time.Hour),
				CreatedAt: at(2 * time.Hour), UpdatedAt: at(2 * time.Hour),
			}, got)
			_, err = resendMerchantEvent(ctx(t), s, f.merchant.ID, paygate.ModeTest, theirs.ID, newID(), at(2*time.Hour))
			wantNotFound(t, err)
			_, err = resendMerchantEvent(ctx(t), s, f.merchant.ID, paygate.ModeLive, ev.ID, newID(), at(2*time.Hour))
			wantNotFound(t, err)
			_, err = resendMerchantEvent(ctx(t), s, f.merchant.ID, paygate.ModeTest, newID(), newID(), at(2*time.Hour))
			wantNotFound(t, err)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: other.merchant.ID, EventID: theirs.ID}, 1)
		}},
	}
}

// userValue returns a user of the fixture's merchant; it is not stored.
func userValue(f fixture, email string, created time.Time) paygate.User {
	return paygate.User{
		ID: newID(), MerchantID: f.merchant.ID, Email: email,
		PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$" + newID()[:22] + "$" + newID(),
		Role:         paygate.RoleOwner,
		CreatedAt:    created, UpdatedAt: created,
	}
}

// sessionValue returns a session of the user created at the time, changed
// by the options; it is not stored.
func sessionValue(u paygate.User, created time.Time, options ...func(*paygate.Session)) paygate.Session {
	se := paygate.Session{
		ID: newID(), TokenHash: randomBytes(32), UserID: u.ID, MerchantID: u.MerchantID,
		CreatedAt: created, LastSeenAt: created, ExpiresAt: created.Add(12 * time.Hour),
		RemoteAddr: "203.0.113.9",
	}
	for _, o := range options {
		o(&se)
	}
	return se
}

// wantSession fails unless the stored session is se revoked at revoked.
func wantSession(t *testing.T, d paygate.DashboardStore, se paygate.Session, revoked *time.Time) {
	t.Helper()
	got, _, err := d.SessionByTokenHash(ctx(t), se.TokenHash)
	must(t, err)
	se.RevokedAt = revoked
	equal(t, "session "+se.ID, se, got)
}

// auditValue returns an audit entry of the fixture's merchant; it is not
// stored.
func auditValue(f fixture, mode paygate.Mode, created time.Time) paygate.AuditEntry {
	return paygate.AuditEntry{
		ID: newID(), MerchantID: f.merchant.ID, Mode: mode, UserID: newID(), Email: "ada@example.com",
		Action: paygate.AuditKeyCreated, Target: newID(), Detail: "secret key", RemoteAddr: "2001:db8::1",
		CreatedAt: created,
	}
}

// sortNewestFirst sorts rows by (time, id) descending, the dashboard's
// list order.
func sortNewestFirst[T any](rows []T, key func(T) (time.Time, string)) {
	slices.SortFunc(rows, func(a, b T) int {
		at, aid := key(a)
		bt, bid := key(b)
		if c := bt.Compare(at); c != 0 {
			return c
		}
		return strings.Compare(bid, aid)
	})
}

// listed creates a payment of the customer with the external id, created
// at the time, in the status.
func (f fixture) listed(t *testing.T, mode paygate.Mode, created time.Time, currency, customer string, status paygate.PaymentStatus) paygate.Payment {
	t.Helper()
	return f.listedRef(t, mode, created, currency, customer, status, "")
}

// listedRef is listed with a merchant reference ("": a fresh one).
func (f fixture) listedRef(t *testing.T, mode paygate.Mode, created time.Time, currency, customer string, status paygate.PaymentStatus, ref string) paygate.Payment {
	t.Helper()
	v := f.paymentValue(mode, created)
	v.Amount.Currency = currency
	if ref != "" {
		v.MerchantRef = ref
	}
	p := f.createPayment(t, v, customer)
	if status != paygate.PaymentCreated {
		must(t, f.s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
			ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
			From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: status,
		}, nil, nil)))
	}
	got, err := f.s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	must(t, err)
	return got
}

// statSpec is a payment of PaymentStats: created at when, moved to status
// with the error code, captured amount when it is captured.
type statSpec struct {
	when             time.Time
	currency         string
	amount, captured int64
	status           paygate.PaymentStatus
	code             string
	provider         string // the provider the payment names; "" none
}

// statPayment creates the payment of the spec.
func (f fixture) statPayment(t *testing.T, mode paygate.Mode, sp statSpec) {
	t.Helper()
	v := f.paymentValue(mode, sp.when)
	v.Amount = paygate.Money{Amount: sp.amount, Currency: sp.currency}
	v.AmountText = fmt.Sprint(sp.amount)
	p := f.createPayment(t, v, "cust-"+newID())
	move := func(from, to paygate.PaymentStatus, captured *int64) {
		t.Helper()
		must(t, f.s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
			ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
			From: []paygate.PaymentStatus{from}, To: to, ErrorCode: sp.code, AmountCaptured: captured,
			ProviderID: sp.provider,
		}, nil, nil)))
	}
	switch sp.status {
	case paygate.PaymentCreated:
		if sp.provider != "" {
			move(paygate.PaymentCreated, paygate.PaymentCreated, nil)
		}
	case paygate.PaymentVoided:
		move(paygate.PaymentCreated, paygate.PaymentAuthorized, nil)
		move(paygate.PaymentAuthorized, paygate.PaymentVoided, nil)
	case paygate.PaymentCaptured:
		move(paygate.PaymentCreated, paygate.PaymentCaptured, &sp.captured)
	default:
		move(paygate.PaymentCreated, sp.status, nil)
	}
}

// listPages lists q in pages of pageSize (0: one call with the default
// size) and fails unless the pages add up to want, in order.
func listPages(t *testing.T, d paygate.DashboardStore, q paygate.PaymentQuery, want []paygate.Payment, pageSize int) {
	t.Helper()
	q.Limit = pageSize
	var got []paygate.Payment
	for range len(want) + 2 {
		page, err := d.ListPayments(ctx(t), q)
		must(t, err)
		if pageSize > 0 && len(page) > pageSize {
			t.Fatalf("page of %d payments, want at most %d", len(page), pageSize)
		}
		got = append(got, page...)
		if pageSize == 0 || len(page) == 0 {
			break
		}
		last := page[len(page)-1]
		q.After = &paygate.PageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if !samePayments(want, got) {
		t.Errorf("ListPayments(%+v) in pages of %d:\n\tgot  %s\n\twant %s", q, pageSize, paymentIDs(got), paymentIDs(want))
		return
	}
	equal(t, "listed payments", want, got)
}

func samePayments(a, b []paygate.Payment) bool {
	return slices.EqualFunc(a, b, func(x, y paygate.Payment) bool { return x.ID == y.ID })
}

func paymentIDs(ps []paygate.Payment) string {
	var b bytes.Buffer
	for _, p := range ps {
		fmt.Fprintf(&b, "%s@%s ", p.ID[:8], p.CreatedAt.Format("15:04"))
	}
	return b.String()
}

// searchPages is listPages for SearchCustomers.
func searchPages(t *testing.T, d paygate.DashboardStore, q paygate.CustomerQuery, want []paygate.Customer, pageSize int) {
	t.Helper()
	q.Limit = pageSize
	var got []paygate.Customer
	for range len(want) + 2 {
		page, err := d.SearchCustomers(ctx(t), q)
		must(t, err)
		if pageSize > 0 && len(page) > pageSize {
			t.Fatalf("page of %d customers, want at most %d", len(page), pageSize)
		}
		got = append(got, page...)
		if pageSize == 0 || len(page) == 0 {
			break
		}
		last := page[len(page)-1]
		q.After = &paygate.PageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	var gotIDs, wantIDs []string
	for _, c := range got {
		gotIDs = append(gotIDs, c.ExternalID)
	}
	for _, c := range want {
		wantIDs = append(wantIDs, c.ExternalID)
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("SearchCustomers(%q) in pages of %d = %v; want %v", q.Text, pageSize, gotIDs, wantIDs)
		return
	}
	equal(t, "customers found", want, got)
}
