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
		return invalidBodyError(body)
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
		fv.SetBytes(bytes.Clone(val))
	default:
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
// bytes, control characters replaced, and a run of 12 or more digits (a key
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
		if c < 0x20 || c == 0x7f || run >= 12 {
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
		case r < 0x20 || r == 0x7f:
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
