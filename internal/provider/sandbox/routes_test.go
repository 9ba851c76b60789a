package sandbox

import "testing"

func TestDefaultRegionsDisjoint(t *testing.T) {
	t.Parallel()
	seen := make(map[string]string)
	for _, r := range regions {
		for _, c := range r.currencies {
			if prev, ok := seen[c]; ok {
				t.Errorf("%s listed by %s and %s", c, prev, r.id)
			}
			seen[c] = r.id
		}
	}
	if len(seen) != 18 {
		t.Errorf("%d regional currencies, want 18", len(seen))
	}
}
