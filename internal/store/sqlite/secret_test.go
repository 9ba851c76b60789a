package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/store/storetest"
)

// TestSecretsAtRest runs the raw-row checks of webhook secrets at rest.
func TestSecretsAtRest(t *testing.T) {
	t.Parallel()
	storetest.ExerciseSecretsAtRest(t, func(t *testing.T) paygate.Store {
		return open(t, filepath.Join(t.TempDir(), "paygate.db"))
	}, storetest.SecretRows{
		Values: func(t *testing.T, s paygate.Store) [][]byte {
			t.Helper()
			rows, err := sqlite.DBForTest(s.(*sqlite.Store), false).QueryContext(t.Context(), `SELECT * FROM webhook_endpoints`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, err := rows.Columns()
			if err != nil {
				t.Fatal(err)
			}
			var out [][]byte
			for rows.Next() {
				vals := make([][]byte, len(cols))
				dest := make([]any, len(cols))
				for i := range vals {
					dest[i] = &vals[i]
				}
				if err := rows.Scan(dest...); err != nil {
					t.Fatal(err)
				}
				out = append(out, vals...)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		},
		WriteLegacy: func(t *testing.T, s paygate.Store, merchantID string, mode paygate.Mode, url, secret, previous string, previousUntil time.Time) {
			t.Helper()
			// As the code before migration 00009 wrote it.
			var until any
			if previous != "" {
				until = previousUntil.UnixMicro()
			}
			_, err := sqlite.DBForTest(s.(*sqlite.Store), true).ExecContext(t.Context(), `
				INSERT INTO webhook_endpoints (merchant_id, mode, url, secret, events, created_at, updated_at,
					previous_secret, previous_secret_expires_at, disabled_at)
				VALUES (?, ?, ?, ?, '[]', ?, ?, ?, ?, NULL)`,
				merchantID, string(mode), url, secret, time.Now().UnixMicro(), time.Now().UnixMicro(), previous, until)
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}
