package sqlite

import (
	"path/filepath"
	"testing"
)

// TestWriterSecureDelete: the writer overwrites deleted content (a used
// token's sealed card) instead of leaving it in the file's free space.
func TestWriterSecureDelete(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var on int
	if err := s.write.QueryRowContext(t.Context(), "PRAGMA secure_delete").Scan(&on); err != nil || on != 1 {
		t.Fatalf("secure_delete %d %v, want 1", on, err)
	}
}
