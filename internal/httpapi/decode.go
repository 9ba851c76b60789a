package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/paygate"
)

// decodeJSON decodes body, which must be one JSON object, into v, a
// non-nil pointer to a request struct, strictly (decisions.md section 1):
//
//   - malformed JSON, a body that is not an object, and data after the
//     object are INVALID_REQUEST without a param;
//   - a field the struct does not declare is INVALID_REQUEST with the field
//     as param, dotted when nested (card.foo); keys match json tags exactly,
//     case included, unlike encoding/json's case-insensitive matching;
//   - a value of the wrong JSON type, or a field given twice, is
//     INVALID_REQUEST with the field as param (amount, billing.state);
//   - null for any field means the field is absent.
//
// encoding/json's DisallowUnknownFields reports no path, so the body is
// first checked with json.Valid and then walked object by object against
// the struct's json tags: nested request structs are descended into,
// strings and booleans are set directly, anything else is decoded by
// encoding/json. Messages name fields but never contain a value.
func decodeJSON(body []byte, v any) *paygate.Error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic("httpapi: decodeJSON needs a non-nil pointer to a struct")
	}
	if !json.Valid(body) {
		// A raw NUL inside a string makes the JSON invalid, yet one field
		// is to blame (decisions §15): with each NUL made an invalid
		// UTF-8 byte instead, a body valid otherwise is walked, and the
		// field holding it refused as text that is not UTF-8.
		nul := bytes.IndexByte(body, 0)
		if nul < 0 {
			return invalidBodyError(body)
		}
		patched := bytes.ReplaceAll(body, []byte{0}, []byte{0xff})
		if !json.Valid(patched) {
			return invalidBodyError(body)
		}
		body = patched
	}
	w := jsonWalker{data: body}
	w.skipSpace()
	if w.peek() != '{' {
		return bodyError("the request body must be a JSON object")
	}
	// json.Valid guarantees one value: nothing but space follows it.
	return decodeObject(w.value(), rv.Elem(), "")
}

// invalidBodyError tells why a body json.Valid refused is wrong. It runs on
// the error path only.
func invalidBodyError(body []byte) *paygate.Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return bodyError("the request body must be a JSON object")
	}
	var first json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&first); err == nil {
		if first[0] != '{' {
			return bodyError("the request body must be a JSON object")
		}
		return bodyError("the request body must hold a single JSON object and nothing after it")
	}
	return bodyError("the request body is not valid JSON")
}

// decodeObject decodes obj, a valid JSON object, into the struct sv. path
// is the dotted name of the object ("" at the top).
func decodeObject(obj []byte, sv reflect.Value, path string) *paygate.Error {
	info := structInfoOf(sv.Type())
	var seen uint64 // one bit per field; request structs have at most 64
	w := jsonWalker{data: obj, pos: 1}
	for {
		w.skipSpace()
		if w.peek() == '}' {
			return nil
		}
		keyRaw := w.value()
		key := keyRaw[1 : len(keyRaw)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, ok := jsonString(keyRaw)
			if !ok {
				return bodyError("the request body is not valid JSON")
			}
			key = []byte(s)
		}
		i, known := info.byName[string(key)]
		if !known {
			param := joinPath(path, safeFieldName(string(key)))
			return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s is not a known field", param)
		}
		w.skipSpace()
		w.pos++ // the ':'
		w.skipSpace()
		val := w.value()
		w.skipSpace()
		if w.peek() == ',' {
			w.pos++
		}

		f := &info.fields[i]
		if seen&(1<<i) != 0 {
			param := joinPath(path, f.name)
			return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s appears more than once", param)
		}
		seen |= 1 << i
		if e := decodeField(val, sv.Field(f.index), f, path); e != nil {
			return e
		}
	}
}

// decodeField sets fv from val, one valid JSON value.
func decodeField(val []byte, fv reflect.Value, f *fieldInfo, path string) *paygate.Error {
	if val[0] == 'n' { // null: absent
		fv.SetZero()
		return nil
	}
	wrongType := func() *paygate.Error {
		param := joinPath(path, f.name)
		return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s must be %s", param, f.want)
	}
	switch f.kind {
	case kindObject:
		if val[0] != '{' {
			return wrongType()
		}
		if fv.Kind() == reflect.Pointer {
			fv.Set(reflect.New(fv.Type().Elem()))
			fv = fv.Elem()
		}
		return decodeObject(val, fv, joinPath(path, f.name))
	case kindString, kindStringPointer:
		if val[0] != '"' {
			return wrongType()
		}
		if badText(val) {
			return badTextError(joinPath(path, f.name))
		}
		s, ok := jsonString(val)
		if !ok {
			return bodyError("the request body is not valid JSON")
		}
		if f.kind == kindStringPointer {
			p := reflect.New(fv.Type().Elem())
			p.Elem().SetString(s)
			fv.Set(p)
		} else {
			fv.SetString(s)
		}
	case kindBool:
		if val[0] != 't' && val[0] != 'f' {
			return wrongType()
		}
		fv.SetBool(val[0] == 't')
	case kindRaw:
		if e := checkRawText(val, joinPath(path, f.name)); e != nil {
			return e
		}
		fv.SetBytes(bytes.Clone(val))
	default:
		if badText(val) {
			return badTextError(joinPath(path, f.name))
		}
		if err := json.Unmarshal(val, fv.Addr().Interface()); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return wrongType()
			}
			return bodyError("the request body is not valid JSON")
		}
	}
	return nil
}

// jsonString returns the value of a valid JSON string literal. Literals
// without escapes and with valid UTF-8 are copied as they are; the rest go
// through encoding/json, which also replaces invalid UTF-8 as it always
// does.
func jsonString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", false
	}
	return s, true
}

// badText reports whether b, valid JSON text or a part of it that starts
// and ends outside any string, holds text decisions §15 refuses in a
// string: bytes that are not UTF-8, the character U+0000 (raw or as the
// escape \u0000), or a \u escape of a lone surrogate (which
// encoding/json would turn into U+FFFD, as it does invalid bytes). Outside
// strings valid JSON has ASCII only and no backslash, so the whole of b can
// be scanned as if it were string contents. It runs on every string of
// every request: no allocation, one pass.
func badText(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0:
			return true
		case c == '\\':
			if i+1 >= len(b) {
				return true
			}
			if b[i+1] != 'u' {
				i += 2
				continue
			}
			r, ok := hex4(b, i+2)
			switch {
			case !ok || r == 0 || (r >= 0xdc00 && r <= 0xdfff):
				return true
			case r >= 0xd800 && r <= 0xdbff:
				// A high surrogate counts only with a low one after it.
				if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
					return true
				}
				lo, ok := hex4(b, i+8)
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return true
				}
				i += 12
			default:
				i += 6
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return true
			}
			i += size
		}
	}
	return false
}

// hex4 is the value of the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// badTextError refuses the text of param ("" when no field is to blame,
// e.g. a key of the body itself).
func badTextError(param string) *paygate.Error {
	if param == "" {
		return bodyError("the request body must be UTF-8 text without NUL characters")
	}
	return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s must be UTF-8 text without NUL characters", param)
}

// checkRawText checks the strings of a value kept as sent (metadata): a bad
// key of the object is param itself, anything bad in a member's value is
// param.key, and a value that is not an object is param as a whole.
func checkRawText(val []byte, param string) *paygate.Error {
	if !badText(val) {
		return nil
	}
	if val[0] != '{' {
		return badTextError(param)
	}
	w := jsonWalker{data: val, pos: 1}
	for {
		w.skipSpace()
		if w.peek() != '"' {
			return badTextError(param) // not reached: something was bad
		}
		keyRaw := w.value()
		if badText(keyRaw) {
			return badTextError(param)
		}
		w.skipSpace()
		w.pos++ // the ':'
		w.skipSpace()
		v := w.value()
		if badText(v) {
			key, _ := jsonString(keyRaw)
			return badTextError(param + "." + safeFieldName(key))
		}
		w.skipSpace()
		if w.peek() == ',' {
			w.pos++
		}
	}
}

// jsonWalker steps through JSON text that json.Valid has accepted, so it
// only has to find where values end, never to check them.
type jsonWalker struct {
	data []byte
	pos  int
}

func (w *jsonWalker) peek() byte {
	if w.pos < len(w.data) {
		return w.data[w.pos]
	}
	return 0
}

func (w *jsonWalker) skipSpace() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// value returns the value starting at pos and moves past it.
func (w *jsonWalker) value() []byte {
	start := w.pos
	depth := 0
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case '"':
			w.skipString()
			if depth == 0 {
				return w.data[start:w.pos]
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of the enclosing value: a scalar ended
				return w.data[start:w.pos]
			}
			depth--
			if depth == 0 {
				w.pos++
				return w.data[start:w.pos]
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return w.data[start:w.pos]
			}
		}
		w.pos++
	}
	return w.data[start:w.pos]
}

// skipString moves past the string whose opening quote is at pos.
func (w *jsonWalker) skipString() {
	w.pos++
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case '\\':
			w.pos += 2
		case '"':
			w.pos++
			return
		default:
			w.pos++
		}
	}
}

func bodyError(msg string) *paygate.Error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "", "%s", msg)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// safeFieldName makes an unknown key fit to be shown as a param: at most 64
// bytes, control characters and U+FFFD (what a key that was not UTF-8
// became) replaced, and a run of 12 or more digits (a key
// that may be a card number, sent by mistake as a key) redacted.
func safeFieldName(key string) string {
	const maxLen = 64
	clean := true
	run := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= '0' && c <= '9' {
			run++
		} else {
			run = 0
		}
		if c < 0x20 || c == 0x7f || c >= utf8.RuneSelf || run >= 12 {
			clean = false
			break
		}
	}
	if clean && len(key) <= maxLen {
		return key
	}
	var b strings.Builder
	run = 0
	for _, r := range key {
		if b.Len() >= maxLen {
			b.WriteString("…")
			break
		}
		switch {
		case r >= '0' && r <= '9':
			run++
			if run >= 12 {
				return "[redacted]"
			}
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			run = 0
			b.WriteRune('?')
		default:
			run = 0
			b.WriteRune(r)
		}
	}
	return b.String()
}

// structInfo describes the JSON fields of a request struct.
type structInfo struct {
	fields []fieldInfo
	byName map[string]int // json name → index into fields
}

type fieldInfo struct {
	name  string // the json name
	index int    // the struct field index
	kind  fieldKind
	want  string // the JSON type expected, for messages: "a string"
}

// fieldKind says how decodeField sets a field.
type fieldKind int

const (
	kindOther         fieldKind = iota // decoded by encoding/json
	kindObject                         // a request struct or pointer to one: walked member by member
	kindString                         // string
	kindStringPointer                  // *string: nil when absent
	kindBool                           // bool
	kindRaw                            // json.RawMessage: kept as sent, nil when null
)

var (
	structInfos   sync.Map // reflect.Type → *structInfo
	rawMessageTyp = reflect.TypeFor[json.RawMessage]()
	unmarshalTyp  = reflect.TypeFor[json.Unmarshaler]()
)

func structInfoOf(t reflect.Type) *structInfo {
	if v, ok := structInfos.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{byName: make(map[string]int)}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		info.byName[name] = len(info.fields)
		info.fields = append(info.fields, fieldInfo{name: name, index: i, kind: kindOf(sf.Type), want: jsonTypeName(sf.Type)})
	}
	if len(info.fields) > 64 {
		panic("httpapi: request struct " + t.String() + " has more than 64 fields")
	}
	v, _ := structInfos.LoadOrStore(t, info)
	return v.(*structInfo)
}

func kindOf(t reflect.Type) fieldKind {
	if t == rawMessageTyp {
		return kindRaw
	}
	if reflect.PointerTo(t).Implements(unmarshalTyp) {
		return kindOther
	}
	switch t.Kind() {
	case reflect.String:
		return kindString
	case reflect.Bool:
		return kindBool
	case reflect.Struct:
		return kindObject
	case reflect.Pointer:
		e := t.Elem()
		if reflect.PointerTo(e).Implements(unmarshalTyp) || e.Implements(unmarshalTyp) {
			return kindOther
		}
		switch e.Kind() {
		case reflect.String:
			return kindStringPointer
		case reflect.Struct:
			return kindObject
		}
	}
	return kindOther
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a different JSON type"
}
