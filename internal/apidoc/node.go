package apidoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// node is a JSON value that keeps the order of an object's members, so that
// the reference page lists paths, properties and examples in the order the
// document gives them (encoding/json's maps would sort them).
type node struct {
	kind kind
	keys []string // an object's member names
	vals []*node  // an object's member values (parallel to keys), an array's items
	text string   // a string; a number's literal
	b    bool     // a boolean
}

type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// parse decodes one JSON value.
func parse(data []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := decodeNode(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("apidoc: data after the document")
	}
	return n, nil
}

func decodeNode(d *json.Decoder) (*node, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, b: t}, nil
	case json.Number:
		return &node{kind: kindNumber, text: t.String()}, nil
	case string:
		return &node{kind: kindString, text: t}, nil
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kindObject}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeNode(d)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
				n.vals = append(n.vals, v)
			}
			_, err := d.Token() // '}'
			return n, err
		case '[':
			n := &node{kind: kindArray}
			for d.More() {
				v, err := decodeNode(d)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := d.Token() // ']'
			return n, err
		}
	}
	return nil, fmt.Errorf("apidoc: unexpected JSON token %v", tok)
}

// get returns the member key of an object, nil when n is not an object or
// has no such member. A nil node has no members.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// str returns a string member's value, "" when there is none.
func (n *node) str(key string) string {
	if v := n.get(key); v != nil && v.kind == kindString {
		return v.text
	}
	return ""
}

// isTrue reports whether the member key is the boolean true.
func (n *node) isTrue(key string) bool {
	v := n.get(key)
	return v != nil && v.kind == kindBool && v.b
}

// each calls f with every member of an object, in order.
func (n *node) each(f func(key string, v *node)) {
	if n == nil || n.kind != kindObject {
		return
	}
	for i, k := range n.keys {
		f(k, n.vals[i])
	}
}

// items returns an array's items (nil for anything else).
func (n *node) items() []*node {
	if n == nil || n.kind != kindArray {
		return nil
	}
	return n.vals
}

// lookup resolves a local reference ("#/components/schemas/Payment").
func (n *node) lookup(ref string) *node {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	cur := n
	for seg := range strings.SplitSeq(path, "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if cur = cur.get(seg); cur == nil {
			return nil
		}
	}
	return cur
}

// marshal writes n as JSON, indented by two spaces.
func (n *node) marshal() string {
	var b strings.Builder
	n.write(&b, "")
	return b.String()
}

func (n *node) write(b *strings.Builder, indent string) {
	switch n.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		fmt.Fprint(b, n.b)
	case kindNumber:
		b.WriteString(n.text)
	case kindString:
		q, _ := json.Marshal(n.text) // a string always marshals
		b.Write(q)
	case kindArray, kindObject:
		open, close := "[", "]"
		if n.kind == kindObject {
			open, close = "{", "}"
		}
		if len(n.vals) == 0 {
			b.WriteString(open + close)
			return
		}
		b.WriteString(open + "\n")
		inner := indent + "  "
		for i, v := range n.vals {
			b.WriteString(inner)
			if n.kind == kindObject {
				q, _ := json.Marshal(n.keys[i])
				b.Write(q)
				b.WriteString(": ")
			}
			v.write(b, inner)
			if i < len(n.vals)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + close)
	}
}
