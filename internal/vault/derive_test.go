package vault

import (
	"bytes"
	"errors"
	"testing"
)

func TestDerivedKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	v, err := New(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := v.DerivedKeys("paygate/test/a")
	if err != nil || len(a) != 2 || len(a[0]) != KeySize {
		t.Fatalf("DerivedKeys: %d keys, %v", len(a), err)
	}
	// Another node with the same keys derives the same; the sealing key's first.
	other, _ := New(k1)
	o, _ := other.DerivedKeys("paygate/test/a")
	if !bytes.Equal(a[1], o[0]) || bytes.Equal(a[0], a[1]) {
		t.Error("derived keys do not follow their master keys")
	}
	b, _ := v.DerivedKeys("paygate/test/b")
	if bytes.Equal(a[0], b[0]) {
		t.Error("two labels derive one key")
	}
	if bytes.Contains(a[0], k2[:8]) {
		t.Error("a derived key shows its master key")
	}
	var nilVault *Vault
	if _, err := nilVault.DerivedKeys("x"); !errors.Is(err, ErrNoKey) {
		t.Errorf("nil vault: %v", err)
	}
	if _, err := v.DerivedKeys(""); err == nil {
		t.Error("empty label accepted")
	}
}
