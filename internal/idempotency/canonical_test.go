package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// canonicalCases are bodies for which canonicalJSON must agree with the
// reference, valid or not; the fuzz test starts from them.
var canonicalCases = []string{
	`{"amount":"10.50","currency":"EUR"}`,
	`{"b":1,"a":[true,false,null,{"z":"1","y":{"x":[]}}],"c":{}}`,
	`{"a":"1","a":"2"}`, `{"a":{"x":1},"b":2,"a":[3]}`, `{"":0,"":1}`,
	`{"name":"Jos\u00e9 \u0022J\u0022 \u003ca\u0026b\u003e \/ \b\f\n\r\t \\"}`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\uD83D\uDE00"`, `"\u12"`, `"\u12g4"`, `"\x"`, `"\'"`, `"a\`, "\"\x01\"", "\"\u007f\"", `"\u0000"`,
	`{"\u00e9":1,"é":2}`, `{"b\"":1,"b":2,"b\\":3}`, `{"\u0001":1,"\u001f":2,"a":3}`,
	`0`, `-0`, `1.5e+10`, `-12.0E-3`, `01`, `1.`, `.5`, `1e`, `+1`, `-`, `1.5e`, `2E+`, `-a`,
	`true`, `false`, `null`, `tru`, `nul`, `falsey`, `nullx`,
	`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{,}`, `{"a":1,}`, `{1:2}`, `{"a":1`, `[1`, `[`, `{`,
	`{"a":1} {"b":2}`, `{"a":1}x`, `1 2`, `123abc`, `[1]]`, `{}}`, `"x" `, " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
	"\ufeff{}", "{\"a\":\"\xff\"}", `NaN`, `Infinity`, `"\u2028\u2029"`, "\"\u2028\"",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

func TestCanonicalJSONMatchesReference(t *testing.T) {
	t.Parallel()
	for _, body := range canonicalCases {
		checkCanonical(t, []byte(body))
	}
}

func checkCanonical(t *testing.T, body []byte) {
	t.Helper()
	got, gotOK := canonicalJSON(body)
	want, wantOK := referenceCanonicalJSON(body)
	if gotOK != wantOK || !bytes.Equal(got, want) {
		short := string(body)
		if len(short) > 80 {
			short = short[:80] + "..."
		}
		t.Errorf("canonicalJSON(%q) = %q, %v; the reference gives %q, %v", short, got, gotOK, want, wantOK)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, body := range canonicalCases {
		if len(body) < 1<<10 { // the deep ones make minimizing slow
			f.Add([]byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkCanonical(t, body)
	})
}

func BenchmarkCanonicalJSON(b *testing.B) {
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := canonicalJSON(body); !ok {
			b.Fatal("not canonical")
		}
	}
}

// referenceCanonicalJSON is the first implementation of canonicalJSON,
// which fingerprints were stored with: encoding/json into any, written
// back with sorted keys. canonicalJSON must agree with it on every input.
func referenceCanonicalJSON(body []byte) ([]byte, bool) {
	if len(body) == 0 || !utf8.Valid(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // trailing data
	}
	var buf bytes.Buffer
	buf.Grow(len(body))
	refWriteCanonical(&buf, v)
	return buf.Bytes(), true
}

// writeCanonical writes v with object keys sorted by code point, no
// whitespace, strings minimally escaped, numbers as written.
func refWriteCanonical(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if v {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		buf.WriteString(v.String())
	case string:
		writeString(buf, []byte(v))
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			refWriteCanonical(buf, e)
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, strings.Compare) // byte order of UTF-8 is code point order
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, []byte(k))
			buf.WriteByte(':')
			refWriteCanonical(buf, v[k])
		}
		buf.WriteByte('}')
	}
}
