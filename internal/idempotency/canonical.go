package idempotency

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The canonical form of a JSON body (see Fingerprint), computed in one pass
// over the bytes without decoding into maps and interfaces: that decoding
// was a fifth of the server's CPU when answering replays. The result must
// stay byte for byte what decoding with encoding/json (UseNumber, into
// any) and writing the value back with sorted keys gives, since
// fingerprints are stored: the reference implementation and a fuzz test
// that compares the two are in canonical_test.go.

// maxDepth is encoding/json's nesting limit: a body nested deeper is not
// valid JSON to it, so it is hashed raw.
const maxDepth = 10000

// jsonNode is one value of a parsed body. Strings and numbers are spans of
// text: a number's literal in the body, a string's decoded value in the
// body (no escapes) or in the canonicalizer's scratch buffer. Arrays and
// objects list their children from first through next; an object's
// children are its members' values, each with the index of its key.
type jsonNode struct {
	kind        byte // 'n' null, 't' true, 'f' false, '0' number, 's' string, '[' array, '{' object
	scratch     bool // a string's span is in the scratch buffer
	start, end  int32
	first, next int32 // child lists, -1 when none
	key         int32 // an object member's key node, -1 otherwise
}

// canonicalizer holds the buffers of one canonicalization, reused through
// canonicalizers.
type canonicalizer struct {
	// cardKey, when set, keys the fingerprint that replaces a card number
	// (see writeCardNumber); nil leaves bodies as they are.
	cardKey []byte
	body    []byte
	nodes   []jsonNode
	scratch []byte  // decoded strings that had escapes
	members []int32 // object members being sorted, a stack of ranges
	depth   int
	// The card number's fingerprint, kept with the pooled canonicalizer:
	// mac is an HMAC under macKey, reused while the key is the same (the
	// vault's request key, so nearly always), and numText and sum are its
	// input and output buffers.
	mac     hash.Hash
	macKey  []byte
	numText bytes.Buffer
	sum     []byte
}

var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// canonicalJSON returns the canonical text of one JSON value, or false when
// body is not exactly one valid JSON value in valid UTF-8.
func canonicalJSON(body []byte) ([]byte, bool) { return canonicalRequest(body, nil) }

// canonicalRequest is canonicalJSON with the card of a request made safe to
// fingerprint when cardKey is set: in a top-level "card" object, "cvv" is
// left out and "number" is replaced by its keyed fingerprint (decisions
// §15), so that the canonical text, and so the stored fingerprint, depends
// on the card only through a key the database never holds.
func canonicalRequest(body, cardKey []byte) ([]byte, bool) {
	if len(body) == 0 || !utf8.Valid(body) {
		return nil, false
	}
	c := canonicalizers.Get().(*canonicalizer)
	defer func() {
		c.body, c.cardKey = nil, nil
		if cap(c.nodes) <= 1<<12 && cap(c.scratch) <= 1<<16 { // keep no outsized buffers
			canonicalizers.Put(c)
		}
	}()
	c.cardKey, c.body, c.nodes, c.scratch, c.members, c.depth = cardKey, body, c.nodes[:0], c.scratch[:0], c.members[:0], 0
	root, pos, ok := c.value(skipSpace(body, 0))
	if !ok || skipSpace(body, pos) != len(body) {
		return nil, false
	}
	var buf bytes.Buffer
	buf.Grow(len(body))
	at := atValue
	if cardKey != nil {
		at = atRoot
	}
	c.write(&buf, root, at)
	return buf.Bytes(), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func (c *canonicalizer) add(n jsonNode) int32 {
	c.nodes = append(c.nodes, n)
	return int32(len(c.nodes) - 1)
}

// value parses the value at i and returns its node and the position after
// it.
func (c *canonicalizer) value(i int) (int32, int, bool) {
	b := c.body
	if i >= len(b) {
		return 0, i, false
	}
	switch b[i] {
	case '{':
		return c.object(i)
	case '[':
		return c.array(i)
	case '"':
		return c.str(i)
	case 't':
		return c.literal(i, "true", 't')
	case 'f':
		return c.literal(i, "false", 'f')
	case 'n':
		return c.literal(i, "null", 'n')
	default:
		return c.number(i)
	}
}

func (c *canonicalizer) literal(i int, text string, kind byte) (int32, int, bool) {
	if !bytes.HasPrefix(c.body[i:], []byte(text)) {
		return 0, i, false
	}
	return c.add(jsonNode{kind: kind, first: -1, next: -1, key: -1}), i + len(text), true
}

// number parses -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, kept as
// written.
func (c *canonicalizer) number(i int) (int32, int, bool) {
	b, start := c.body, i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		digits()
	default:
		return 0, i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, i, false
		}
	}
	return c.add(jsonNode{kind: '0', start: int32(start), end: int32(i), first: -1, next: -1, key: -1}), i, true
}

// str parses the string at i and decodes it as encoding/json does: a lone
// or mismatched surrogate escape becomes U+FFFD.
func (c *canonicalizer) str(i int) (int32, int, bool) {
	b := c.body
	i++ // the opening quote
	start := i
	for i < len(b) && b[i] != '"' && b[i] != '\\' {
		if b[i] < 0x20 {
			return 0, i, false
		}
		i++
	}
	if i >= len(b) {
		return 0, i, false
	}
	if b[i] == '"' { // no escapes: the value is the body's own bytes
		return c.add(jsonNode{kind: 's', start: int32(start), end: int32(i), first: -1, next: -1, key: -1}), i + 1, true
	}
	sStart := len(c.scratch)
	c.scratch = append(c.scratch, b[start:i]...)
	for {
		if i >= len(b) {
			return 0, i, false
		}
		switch ch := b[i]; {
		case ch == '"':
			n := jsonNode{kind: 's', scratch: true, start: int32(sStart), end: int32(len(c.scratch)), first: -1, next: -1, key: -1}
			return c.add(n), i + 1, true
		case ch < 0x20:
			return 0, i, false
		case ch != '\\':
			c.scratch = append(c.scratch, ch)
			i++
			continue
		}
		if i+1 >= len(b) {
			return 0, i, false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			c.scratch = append(c.scratch, e)
		case 'b':
			c.scratch = append(c.scratch, '\b')
		case 'f':
			c.scratch = append(c.scratch, '\f')
		case 'n':
			c.scratch = append(c.scratch, '\n')
		case 'r':
			c.scratch = append(c.scratch, '\r')
		case 't':
			c.scratch = append(c.scratch, '\t')
		case 'u':
			r, ok := hex4(b, i+2)
			if !ok {
				return 0, i, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := u4(b, i); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						c.scratch = utf8.AppendRune(c.scratch, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			c.scratch = utf8.AppendRune(c.scratch, r)
			continue
		default:
			return 0, i, false
		}
		i += 2
	}
}

// u4 reads a \uXXXX escape at i.
func u4(b []byte, i int) (rune, bool) {
	if i+1 >= len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	return hex4(b, i+2)
}

// hex4 reads four hexadecimal digits at i.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, ch := range b[i : i+4] {
		switch {
		case ch >= '0' && ch <= '9':
			ch -= '0'
		case ch >= 'a' && ch <= 'f':
			ch -= 'a' - 10
		case ch >= 'A' && ch <= 'F':
			ch -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(ch)
	}
	return r, true
}

func (c *canonicalizer) enter() bool {
	c.depth++
	return c.depth <= maxDepth
}

func (c *canonicalizer) array(i int) (int32, int, bool) {
	return c.container(i, '[', ']', c.value)
}

func (c *canonicalizer) object(i int) (int32, int, bool) {
	return c.container(i, '{', '}', c.member)
}

// container parses the array or object (kind, ending in end) whose opening
// byte is at i: elements separated by commas, each parsed by elem and
// linked as the container's children.
func (c *canonicalizer) container(i int, kind, end byte, elem func(i int) (int32, int, bool)) (int32, int, bool) {
	if !c.enter() {
		return 0, i, false
	}
	defer func() { c.depth-- }()
	n := c.add(jsonNode{kind: kind, first: -1, next: -1, key: -1})
	i = skipSpace(c.body, i+1)
	if i < len(c.body) && c.body[i] == end {
		return n, i + 1, true
	}
	last := int32(-1)
	for {
		v, j, ok := elem(i)
		if !ok {
			return 0, j, false
		}
		if last < 0 {
			c.nodes[n].first = v
		} else {
			c.nodes[last].next = v
		}
		last = v
		i = skipSpace(c.body, j)
		if i >= len(c.body) {
			return 0, i, false
		}
		switch c.body[i] {
		case ',':
			i = skipSpace(c.body, i+1)
		case end:
			return n, i + 1, true
		default:
			return 0, i, false
		}
	}
}

// member parses an object's "key": value at i and returns the value's node,
// which names its key.
func (c *canonicalizer) member(i int) (int32, int, bool) {
	if i >= len(c.body) || c.body[i] != '"' {
		return 0, i, false
	}
	k, j, ok := c.str(i)
	if !ok {
		return 0, j, false
	}
	i = skipSpace(c.body, j)
	if i >= len(c.body) || c.body[i] != ':' {
		return 0, i, false
	}
	v, j, ok := c.value(skipSpace(c.body, i+1))
	if !ok {
		return 0, j, false
	}
	c.nodes[v].key = k
	return v, j, true
}

// text returns a string node's decoded value, or a number's literal.
func (c *canonicalizer) text(n int32) []byte {
	nd := &c.nodes[n]
	if nd.scratch {
		return c.scratch[nd.start:nd.end]
	}
	return c.body[nd.start:nd.end]
}

// Where a node stands, for the card's redaction (canonicalRequest).
const (
	atValue byte = iota // anywhere: written as it is
	atRoot              // the body's top-level value
	atCard              // the top-level "card" object
)

// cardNumberLabel starts the message of a card number's fingerprint.
const cardNumberLabel = "paygate/idempotency/card-number/v2\x00"

// write writes node n in canonical form: object keys sorted by code point
// (byte order of their UTF-8), the last of duplicate keys kept, no
// whitespace, strings minimally escaped, numbers as written. at says where
// n stands, for the card's redaction.
func (c *canonicalizer) write(buf *bytes.Buffer, n int32, at byte) {
	switch nd := c.nodes[n]; nd.kind {
	case 'n':
		buf.WriteString("null")
	case 't':
		buf.WriteString("true")
	case 'f':
		buf.WriteString("false")
	case '0':
		buf.Write(c.text(n))
	case 's':
		writeString(buf, c.text(n))
	case '[':
		buf.WriteByte('[')
		for v := nd.first; v >= 0; v = c.nodes[v].next {
			if v != nd.first {
				buf.WriteByte(',')
			}
			c.write(buf, v, atValue)
		}
		buf.WriteByte(']')
	case '{':
		// The members go on a stack shared with nested objects: this
		// object's range stays below what they push, and is re-sliced
		// after each since append may move the stack.
		from := len(c.members)
		for v := nd.first; v >= 0; v = c.nodes[v].next {
			c.members = append(c.members, v)
		}
		to := len(c.members)
		// Stable, so that among equal keys the last written stays last.
		slices.SortStableFunc(c.members[from:to], func(a, b int32) int {
			return bytes.Compare(c.text(c.nodes[a].key), c.text(c.nodes[b].key))
		})
		buf.WriteByte('{')
		wrote := false
		for i := from; i < to; i++ {
			v := c.members[i]
			key := c.text(c.nodes[v].key)
			if i+1 < to && bytes.Equal(key, c.text(c.nodes[c.members[i+1]].key)) {
				continue // a later duplicate wins
			}
			child := atValue
			switch {
			case at == atRoot && string(key) == "card" && c.nodes[v].kind == '{':
				child = atCard
			case at == atCard && string(key) == "cvv":
				continue
			}
			if wrote {
				buf.WriteByte(',')
			}
			wrote = true
			writeString(buf, key)
			buf.WriteByte(':')
			if at == atCard && string(key) == "number" {
				c.writeCardNumber(buf, v)
				continue
			}
			c.write(buf, v, child)
		}
		buf.WriteByte('}')
		c.members = c.members[:from]
	}
}

// writeCardNumber writes, in place of a card's number, the hex HMAC-SHA256
// under cardKey of the number's canonical text: equal numbers give equal
// fingerprints, and nothing in the output can be tried against a number
// without the key.
func (c *canonicalizer) writeCardNumber(buf *bytes.Buffer, n int32) {
	c.numText.Reset()
	c.write(&c.numText, n, atValue)
	if c.mac == nil || !bytes.Equal(c.macKey, c.cardKey) {
		c.mac = hmac.New(sha256.New, c.cardKey)
		c.macKey = append(c.macKey[:0], c.cardKey...)
	} else {
		c.mac.Reset()
	}
	c.mac.Write([]byte(cardNumberLabel))
	c.mac.Write(c.numText.Bytes())
	c.sum = c.mac.Sum(c.sum[:0])
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], c.sum)
	buf.WriteByte('"')
	buf.Write(out[:])
	buf.WriteByte('"')
}
