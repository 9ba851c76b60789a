package postgres

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/storetest"
	"github.com/paygate/paygate/internal/testenv"
)

// TestSecretsAtRest runs the raw-row checks of webhook secrets at rest.
func TestSecretsAtRest(t *testing.T) {
	storetest.ExerciseSecretsAtRest(t, func(t *testing.T) paygate.Store {
		s, err := Open(t.Context(), testenv.PostgresSchema(t))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, storetest.SecretRows{
		Values: func(t *testing.T, s paygate.Store) [][]byte {
			t.Helper()
			// Every column as its text form: bytea as \x hex would hide
			// nothing plain, so read bytea raw and the rest as text.
			rows, err := s.(*Store).pool.Query(t.Context(), `
				SELECT merchant_id, mode, url, secret, events::text, previous_secret,
					created_at::text, updated_at::text, COALESCE(previous_secret_expires_at::text, ''),
					COALESCE(disabled_at::text, ''), secret_sealed, previous_secret_sealed
				FROM webhook_endpoints`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out [][]byte
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					switch v := v.(type) {
					case string:
						out = append(out, []byte(v))
					case []byte:
						out = append(out, v)
					}
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			// Guard the list above against a column added later.
			var n int
			if err := s.(*Store).pool.QueryRow(t.Context(), `
				SELECT count(*) FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = 'webhook_endpoints'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 12 {
				t.Fatalf("webhook_endpoints has %d columns; the raw check reads 12", n)
			}
			return out
		},
		WriteLegacy: func(t *testing.T, s paygate.Store, merchantID string, mode paygate.Mode, url, secret, previous string, previousUntil time.Time) {
			t.Helper()
			var until *time.Time
			if previous != "" {
				until = &previousUntil
			}
			// As the code before migration 00009 wrote it.
			_, err := s.(*Store).pool.Exec(t.Context(), `
				INSERT INTO webhook_endpoints (merchant_id, mode, url, secret, events, created_at, updated_at,
					previous_secret, previous_secret_expires_at, disabled_at)
				VALUES ($1, $2, $3, $4, '[]', now(), now(), $5, $6, NULL)`,
				merchantID, mode, url, secret, previous, until)
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}
