package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// Op is what one iteration of a client does.
type Op int

// The operations of a mix.
const (
	OpApprove      Op = iota // create a payment with a card that is captured
	OpDecline                // create a payment with a declining card (CARD_DECLINED expected)
	OpRefund                 // create a captured payment, then refund part of it
	OpReplay                 // send a create again with a used key and body
	OpGet                    // GET /v1/payments/{id}
	OpUnauthorized           // a request with a bad key (401 expected)
	OpCardTest               // an attacker testing declining cards from a few addresses (cardtest.go)
	OpToken                  // POST /v1/tokens with the public key: a card tokenized (decisions §19)
	numOps
)

var opNames = [numOps]string{"approve", "decline", "refund", "replay", "get", "unauthorized", "cardtest", "token"}

// String returns the operation's name in a --mix.
func (o Op) String() string { return opNames[o] }

// Mix is the weight of each operation.
type Mix [numOps]int

// DefaultMix is the mix of `paygate bench` without --mix.
const DefaultMix = "approve=90,decline=5,refund=5"

// ParseMix reads "approve=90,decline=5,refund=5": operation names with
// non-negative integer weights, at least one of them positive.
func ParseMix(s string) (Mix, error) {
	var m Mix
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		if !ok {
			return Mix{}, fmt.Errorf("mix entry %q must be name=weight", part)
		}
		name = strings.TrimSpace(name)
		op := -1
		for i, n := range opNames {
			if n == name {
				op = i
			}
		}
		if op < 0 {
			return Mix{}, fmt.Errorf("mix entry %q: unknown operation (want %s)", part, strings.Join(opNames[:], ", "))
		}
		if seen[name] {
			return Mix{}, fmt.Errorf("mix names %s twice", name)
		}
		seen[name] = true
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 || n > 1_000_000 {
			return Mix{}, fmt.Errorf("mix entry %q: weight must be an integer from 0 to 1000000", part)
		}
		m[op] = n
	}
	if m.total() == 0 {
		return Mix{}, fmt.Errorf("mix %q has no operation with a positive weight", s)
	}
	return m, nil
}

func (m Mix) total() int {
	t := 0
	for _, w := range m {
		t += w
	}
	return t
}

// String writes the mix as ParseMix reads it, without zero weights.
func (m Mix) String() string {
	var parts []string
	for i, w := range m {
		if w > 0 {
			parts = append(parts, opNames[i]+"="+strconv.Itoa(w))
		}
	}
	return strings.Join(parts, ",")
}

// Map returns the positive weights by operation name, for the JSON report.
func (m Mix) Map() map[string]int {
	out := map[string]int{}
	for i, w := range m {
		if w > 0 {
			out[opNames[i]] = w
		}
	}
	return out
}

// needsPool reports whether the mix reads payments created beforehand.
func (m Mix) needsPool() bool { return m[OpReplay] > 0 || m[OpGet] > 0 }

// picker chooses operations by weight: a uniform draw in [0, total) finds
// its operation by the running sums.
type picker struct {
	cum   [numOps]int
	total int
}

func newPicker(m Mix) picker {
	var p picker
	for i, w := range m {
		p.total += w
		p.cum[i] = p.total
	}
	return p
}

// pick returns the operation of draw r, 0 <= r < total.
func (p picker) pick(r int) Op {
	for i, c := range p.cum {
		if r < c {
			return Op(i)
		}
	}
	return Op(numOps - 1)
}
