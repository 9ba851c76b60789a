package adyen

import (
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// journalTTL is how long the connector remembers a charge.
const journalTTL = 24 * time.Hour

// entry is what the connector knows of one charge.
type entry struct {
	at      time.Time
	sent    bool // the request may have reached Adyen
	done    bool // a definite answer is known
	errored string
	result  paygate.ChargeResult
}

// journal is the connector's memory of the charges it sent, keyed by our
// payment id, so that Inquire can answer what this process learned: Adyen's
// Checkout API has no lookup by reference. It is kept in memory: a restart
// forgets it (see Inquire).
type journal struct {
	mu sync.Mutex
	m  map[string]entry
}

func (j *journal) get(id string) (entry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.m[id]
	return e, ok
}

// put stores e unless a definite answer is known already (a late
// notification never overwrites a definite answer with another).
func (j *journal) put(id string, e entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.m == nil {
		j.m = map[string]entry{}
	}
	if old, ok := j.m[id]; ok && old.done && !e.done {
		return
	}
	e.at = time.Now()
	j.m[id] = e
	if len(j.m)%1024 == 0 {
		for k, v := range j.m {
			if time.Since(v.at) > journalTTL {
				delete(j.m, k)
			}
		}
	}
}
