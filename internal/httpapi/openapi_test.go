package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/paygate/paygate/docs"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/connectors"
)

// The API's OpenAPI document (docs/openapi.json) is written by hand. The
// end-to-end suite checks every exchange against it; the tests here check
// its shape against the code itself, so that drift shows even where no
// end-to-end test goes: every route is an operation and every operation a
// route, every field of a request or answer type is a property of its
// schema and the reverse, and every error name has its status.

// openAPI is the document, decoded.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	return doc
}

func obj(v any, path ...string) map[string]any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	m, _ := v.(map[string]any)
	return m
}

// TestOpenAPIOperationsAreTheRoutes checks that the document's operations
// are exactly the server's routes: the API's, which take a key, and those
// served without one (the 3-D Secure callback, the connectors' endpoints,
// the document itself). A connector added to connectors.All with an
// endpoint needs its operation in the document.
func TestOpenAPIOperationsAreTheRoutes(t *testing.T) {
	doc := openAPI(t)
	keyed, keyless, public := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for path, item := range obj(doc, "paths") {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			p := strings.ToUpper(method) + " " + path
			sec, ok := obj(op)["security"].([]any)
			switch {
			case ok && len(sec) == 0:
				keyless[p] = true
			case ok && len(sec) == 1 && obj(sec[0])["publicKey"] != nil:
				public[p] = true
			default:
				keyed[p] = true
			}
		}
	}
	// With the public key: the card tokens, and nothing else.
	if got, want := slices.Sorted(maps.Keys(public)), slices.Sorted(slices.Values(tokenRoutes())); !slices.Equal(got, want) {
		t.Errorf("the document's operations with the public key:\n%s\nthe server's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var routes []string
	for _, rt := range (&Server{}).apiRoutes() {
		routes = append(routes, rt.pattern)
	}
	if got, want := slices.Sorted(maps.Keys(keyed)), slices.Sorted(slices.Values(routes)); !slices.Equal(got, want) {
		t.Errorf("the document's operations with a key:\n%s\nthe API's routes:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Without a key: the callback (a form post, and a provider's GET
	// return), the document, and every connector endpoint, whose
	// patterns name no method (each answers the others 405 itself).
	want := map[string]bool{
		"POST " + payment.CallbackPath + "{token}": true,
		"GET " + payment.CallbackPath + "{token}":  true,
		"GET /v1/openapi.json":                     true,
	}
	for _, c := range connectors.All {
		if c.Endpoints == nil {
			continue
		}
		for pattern := range c.Endpoints(connector.Services{}) {
			method, path, ok := strings.Cut(pattern, " ")
			if !ok {
				method, path = "POST", pattern
			}
			want[method+" "+path] = true
		}
	}
	if got, want := slices.Sorted(maps.Keys(keyless)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, want) {
		t.Errorf("the document's operations without a key:\n%s\nthe server's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOpenAPISchemasAreTheTypes checks each request and answer type of the
// API against its schema: the same fields, no others allowed, and in an
// answer a field is required exactly when the type always writes it (no
// omitempty).
func TestOpenAPISchemasAreTheTypes(t *testing.T) {
	schemas := obj(openAPI(t), "components", "schemas")
	// optionalAlways are the fields an answer always has, which the
	// document still calls optional, and why.
	optionalAlways := map[string]string{
		"Refund.errorCode":    "a replay of an answer stored before refunds had it lacks it",
		"Refund.errorMessage": "a replay of an answer stored before refunds had it lacks it",
	}
	for _, c := range []struct {
		typ    any
		schema string
		answer bool
	}{
		{paymentRecord{}, "Payment", true},
		{creationResult{}, "PaymentCreation", true},
		{threeDsData{}, "ThreeDsData", true},
		{refundRecord{}, "Refund", true},
		{customerRecord{}, "Customer", true},
		{storedCardRecord{}, "StoredCard", true},
		{deletedRecord{}, "DeletedStoredCard", true},
		{errorBody{}, "Error", true},
		{metaBody{}, "Meta", true},
		// The one envelope type writes every answer: its fields are the
		// fullest envelope's; which of them an answer has is its status's.
		{envelope{}, "ErrorReadEnvelope", false},
		{paymentRequest{}, "PaymentRequest", false},
		{cardRequest{}, "Card", false},
		{cardRequest{}, "StoredCardInput", false},
		{billingRequest{}, "Billing", false},
		{refundRequest{}, "RefundRequest", false},
		{customerRequest{}, "CustomerRequest", false},
		{captureRequest{}, "CaptureRequest", false},
		{storedCardRequest{}, "StoredCardRequest", false},
		{emptyObject{}, "VoidRequest", false},
		{tokenRequest{}, "TokenRequest", false},
		{tokenRecord{}, "CardToken", true},
		{tokenCardRecord{}, "CardTokenCard", true},
	} {
		t.Run(c.schema, func(t *testing.T) {
			s := obj(schemas, c.schema)
			if s == nil {
				t.Fatalf("no schema %s", c.schema)
			}
			if ap, ok := s["additionalProperties"].(bool); !ok || ap {
				t.Errorf("additionalProperties is %v, want false: drift would pass unseen", s["additionalProperties"])
			}
			props := obj(s, "properties")
			required := map[string]bool{}
			for _, r := range asSlice(s["required"]) {
				required[r.(string)] = true
			}
			fields := map[string]bool{} // name → always written
			rt := reflect.TypeOf(c.typ)
			for i := range rt.NumField() {
				name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
				fields[name] = !strings.Contains(opts, "omitempty")
			}
			if got, want := slices.Sorted(maps.Keys(props)), slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
				t.Fatalf("properties %v, the type's fields %v", got, want)
			}
			for name := range required {
				if !c.answer {
					continue // what a request must carry is validation's, not the type's
				}
				if !fields[name] {
					t.Errorf("%s is required, but the type leaves it out when empty", name)
				}
			}
			for name, always := range fields {
				if c.answer && always && !required[name] && optionalAlways[c.schema+"."+name] == "" {
					t.Errorf("%s is always written, but the document calls it optional", name)
				}
			}
		})
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// TestOpenAPIErrorNames checks the error names and their statuses: the
// document's ErrorName enum is the set of names the server answers, and
// its envelopes pair each name with the status of the server's table.
func TestOpenAPIErrorNames(t *testing.T) {
	schemas := obj(openAPI(t), "components", "schemas")
	want := map[string]bool{}
	names := map[string]bool{}
	for code, status := range statusOf {
		want[fmt.Sprintf("%d %s", status, nameOf(code))] = true
		names[nameOf(code)] = true
	}
	var enum []string
	for _, v := range obj(schemas, "ErrorName")["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	if got, want := slices.Sorted(slices.Values(enum)), slices.Sorted(maps.Keys(names)); !slices.Equal(got, want) {
		t.Errorf("ErrorName %v, the server's names %v", got, want)
	}
	// Every envelope that pins a status pins the name the server gives it,
	// and every pair of the server's table has an envelope.
	got := map[string]bool{}
	for name, s := range schemas {
		for _, part := range append([]any{s}, asSlice(obj(s)["allOf"])...) {
			e := obj(part, "properties", "error", "properties")
			status, name2 := obj(e, "status")["const"], obj(e, "name")["const"]
			if status == nil || name2 == nil {
				continue
			}
			pair := fmt.Sprintf("%v %v", status, name2)
			if !want[pair] {
				t.Errorf("schema %s pairs status and name %s, which the server never does", name, pair)
			}
			got[pair] = true
		}
	}
	for pair := range want {
		if !got[pair] {
			t.Errorf("no envelope of the document answers %s", pair)
		}
	}
}
