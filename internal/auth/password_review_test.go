package auth

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A flood of sign-in attempts must queue for argon2id rather than run all
// at once, each holding 19 MiB. Not parallel: it replaces idKey, and the
// package's parallel tests run only after it has put it back.
func TestPasswordHashingIsBounded(t *testing.T) {
	hash, err := HashPassword("a password of some length")
	if err != nil {
		t.Fatal(err)
	}
	real := idKey
	t.Cleanup(func() { idKey = real })
	var running, peak atomic.Int32
	idKey = func(pw, salt []byte, iters, memory uint32, threads uint8, keyLen uint32) []byte {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return real(pw, salt, iters, memory, threads, keyLen)
	}
	attempts := 4 * cap(passwordSlots)
	var wg sync.WaitGroup
	for i := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 3 {
			case 0:
				_, _ = CheckPassword(hash, "a wrong guess of a password")
			case 1:
				DummyCheck("a guess for an unknown email")
			default:
				_, _ = HashPassword("a new password to hash")
			}
		}()
	}
	wg.Wait()
	if got := peak.Load(); got > int32(cap(passwordSlots)) || got < 1 {
		t.Errorf("%d argon2id computations ran at once, want at most %d", got, cap(passwordSlots))
	}
}
