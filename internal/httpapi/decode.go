package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"

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
// walked object by object against the struct's json tags: nested request
// structs are descended into, every other field is decoded whole by
// encoding/json. Messages name fields but never contain a value.
func decodeJSON(body []byte, v any) *paygate.Error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic("httpapi: decodeJSON needs a non-nil pointer to a struct")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return bodyError("the request body must be a JSON object")
		}
		return bodyError("the request body is not valid JSON")
	}
	if tok != json.Delim('{') {
		return bodyError("the request body must be a JSON object")
	}
	if e := decodeObject(dec, rv.Elem(), ""); e != nil {
		return e
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bodyError("the request body must hold a single JSON object and nothing after it")
	}
	return nil
}

// decodeObject decodes the members of the object whose '{' dec has just
// read into the struct sv. path is the dotted name of the object ("" at the
// top).
func decodeObject(dec *json.Decoder, sv reflect.Value, path string) *paygate.Error {
	info := structInfoOf(sv.Type())
	var seen uint64 // one bit per field index; request structs have < 64 fields
	for {
		tok, err := dec.Token()
		if err != nil {
			return syntaxOrEOF(err)
		}
		if tok == json.Delim('}') {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return bodyError("the request body is not valid JSON")
		}
		i, known := info.byName[key]
		if !known {
			param := joinPath(path, safeFieldName(key))
			return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s is not a known field", param)
		}
		f := &info.fields[i]
		param := joinPath(path, f.name)
		if seen&(1<<i) != 0 {
			return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s appears more than once", param)
		}
		seen |= 1 << i
		fv := sv.Field(f.index)
		if f.object {
			if e := decodeNested(dec, fv, param); e != nil {
				return e
			}
			continue
		}
		if err := dec.Decode(fv.Addr().Interface()); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s must be %s", param, f.want)
			}
			return syntaxOrEOF(err)
		}
		if f.raw && string(fv.Bytes()) == "null" {
			fv.SetBytes(nil)
		}
	}
}

// decodeNested decodes the value of a field that holds a request struct
// (or a pointer to one): an object is walked, null leaves the field absent,
// anything else is the wrong type.
func decodeNested(dec *json.Decoder, fv reflect.Value, param string) *paygate.Error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxOrEOF(err)
	}
	if tok == nil { // null
		fv.SetZero()
		return nil
	}
	if tok != json.Delim('{') {
		return paygate.Errorf(paygate.CodeInvalidRequest, param, "%s must be an object", param)
	}
	if fv.Kind() == reflect.Pointer {
		fv.Set(reflect.New(fv.Type().Elem()))
		fv = fv.Elem()
	}
	return decodeObject(dec, fv, param)
}

func bodyError(msg string) *paygate.Error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "", "%s", msg)
}

func syntaxOrEOF(err error) *paygate.Error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return bodyError("the request body is not valid JSON: it ends too early")
	}
	return bodyError("the request body is not valid JSON")
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
	name   string // the json name
	index  int    // the struct field index
	object bool   // a request struct or pointer to one: walked member by member
	raw    bool   // a json.RawMessage: null is turned into nil
	want   string // the JSON type expected, for messages: "a string"
}

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
		f := fieldInfo{name: name, index: i, want: jsonTypeName(sf.Type)}
		st := sf.Type
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		f.object = st.Kind() == reflect.Struct && !reflect.PointerTo(st).Implements(unmarshalTyp)
		f.raw = sf.Type == rawMessageTyp
		info.byName[name] = len(info.fields)
		info.fields = append(info.fields, f)
	}
	if len(info.fields) > 64 {
		panic("httpapi: request struct " + t.String() + " has more than 64 fields")
	}
	v, _ := structInfos.LoadOrStore(t, info)
	return v.(*structInfo)
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
