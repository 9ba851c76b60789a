package webhook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// schemaDir holds the documented schema of every event.
const schemaDir = "../../docs/events"

// TestPayloadsMatchSchemas builds every event the code can send, in every
// shape its builders produce, and validates each against its documented
// schema; every schema file must belong to an event, and every event must
// have one.
func TestPayloadsMatchSchemas(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 3, 14, 15, 9, 26, 535897000, time.UTC)
	pay := func(status paygate.PaymentStatus, amount int64, currency, errCode, decline string) paygate.Payment {
		return paygate.Payment{
			ID: id.New(), MerchantID: id.New(), Mode: paygate.ModeLive, Status: status,
			Amount: paygate.Money{Amount: amount, Currency: currency}, ErrorCode: errCode, DeclineCode: decline,
		}
	}
	ref := func(status paygate.RefundStatus) paygate.Refund {
		return paygate.Refund{
			ID: id.New(), MerchantID: id.New(), Mode: paygate.ModeTest, PaymentID: id.New(), Status: status,
			Amount: paygate.Money{Amount: 400, Currency: "EUR"},
		}
	}
	events := []paygate.Event{
		PaymentEvent(paygate.EventPaymentCaptured, pay(paygate.PaymentCaptured, 1050, "EUR", "", ""), 1050, now),
		PaymentEvent(paygate.EventPaymentCaptured, pay(paygate.PaymentCaptured, 100, "JPY", "", ""), 60, now),
		PaymentEvent(paygate.EventPaymentAuthorized, pay(paygate.PaymentAuthorized, 1050, "EUR", "", ""), 1050, now),
		PaymentEvent(paygate.EventPaymentVoided, pay(paygate.PaymentVoided, 1050, "EUR", "", ""), 1050, now),
		PaymentEvent(paygate.EventPaymentFailed, pay(paygate.PaymentFailed, 1050, "EUR", "CARD_DECLINED", "insufficient_funds"), 1050, now),
		PaymentEvent(paygate.EventPaymentFailed, pay(paygate.PaymentFailed, 0, "KWD", "PROVIDER_ERROR", ""), 0, now),
		RefundEvent(paygate.EventRefundCreated, ref(paygate.RefundCreated), now),
		RefundEvent(paygate.EventRefundSucceeded, ref(paygate.RefundSucceeded), now),
		RefundEvent(paygate.EventRefundFailed, failedRefund(ref(paygate.RefundFailed)), now),
		PingEvent(id.New(), paygate.ModeTest, now),
	}
	covered := map[string]bool{}
	for _, ev := range events {
		schema := loadSchema(t, string(ev.Type))
		var doc any
		if err := json.Unmarshal(ev.Payload, &doc); err != nil {
			t.Fatalf("%s: payload is not JSON: %v", ev.Type, err)
		}
		if errs := validate(schema, doc, "$"); len(errs) > 0 {
			t.Errorf("%s payload %s does not match its schema:\n\t%s", ev.Type, ev.Payload, strings.Join(errs, "\n\t"))
		}
		covered[string(ev.Type)] = true
	}
	for _, typ := range append(slices.Clone(paygate.EventTypes), paygate.EventPing) {
		if !covered[string(typ)] {
			t.Errorf("no payload of %s was checked", typ)
		}
	}
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".schema.json"))
	}
	sort.Strings(names)
	var want []string
	for typ := range covered {
		want = append(want, typ)
	}
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("schema files %v, want one per event %v", names, want)
	}

	// A refund's error is in refund.failed only, and null elsewhere.
	for name, ev := range map[string]paygate.Event{
		"refund.failed without its error":  RefundEvent(paygate.EventRefundFailed, ref(paygate.RefundFailed), now),
		"refund.succeeded with an error":   RefundEvent(paygate.EventRefundSucceeded, failedRefund(ref(paygate.RefundSucceeded)), now),
		"refund.created with an error":     RefundEvent(paygate.EventRefundCreated, failedRefund(ref(paygate.RefundCreated)), now),
		"refund.failed with another error": RefundEvent(paygate.EventRefundFailed, withError(ref(paygate.RefundFailed), "CARD_DECLINED"), now),
	} {
		var doc any
		if err := json.Unmarshal(ev.Payload, &doc); err != nil {
			t.Fatal(err)
		}
		if errs := validate(loadSchema(t, string(ev.Type)), doc, "$"); len(errs) == 0 {
			t.Errorf("the %s schema accepted %s: %s", ev.Type, name, ev.Payload)
		}
	}

	// The validator itself refuses what it should.
	schema := loadSchema(t, "payment.captured")
	for name, bad := range map[string]string{
		"string amount":   `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.captured","mode":"test","timestamp":"2031-03-14T15:09:26.535Z","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":"10.50","currency":"EUR"}}`,
		"fractional":      `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.captured","mode":"test","timestamp":"2031-03-14T15:09:26.535Z","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":10.5,"currency":"EUR"}}`,
		"missing mode":    `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.captured","timestamp":"2031-03-14T15:09:26.535Z","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":1050,"currency":"EUR"}}`,
		"wrong event":     `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.failed","mode":"test","timestamp":"2031-03-14T15:09:26.535Z","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":1050,"currency":"EUR"}}`,
		"extra field":     `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.captured","mode":"test","timestamp":"2031-03-14T15:09:26.535Z","card":"4242","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":1050,"currency":"EUR"}}`,
		"bad timestamp":   `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.captured","mode":"test","timestamp":"yesterday","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":1050,"currency":"EUR"}}`,
		"negative amount": `{"id":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","event":"payment.captured","mode":"test","timestamp":"2031-03-14T15:09:26.535Z","data":{"transactionId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","merchantId":"0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60","status":"captured","amount":-1,"currency":"EUR"}}`,
	} {
		var doc any
		if err := json.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(err)
		}
		if errs := validate(schema, doc, "$"); len(errs) == 0 {
			t.Errorf("the validator accepted a payload with %s", name)
		}
	}
}

// failedRefund is r with the error of a refund the provider refused.
func failedRefund(r paygate.Refund) paygate.Refund {
	return withError(r, "PROVIDER_ERROR")
}

func withError(r paygate.Refund, code string) paygate.Refund {
	r.ErrorCode, r.ErrorMessage = code, "The card issuer refused the refund."
	return r
}

func loadSchema(t *testing.T, event string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(schemaDir, event+".schema.json"))
	if err != nil {
		t.Fatalf("schema of %s: %v", event, err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema of %s is not JSON: %v", event, err)
	}
	return s
}

// validate checks doc against the subset of JSON Schema the event schemas
// use: type (object, string, integer, null), required, properties,
// additionalProperties false, const, enum, pattern, minimum. It returns one
// message per violation.
func validate(schema map[string]any, doc any, path string) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	if c, ok := schema["const"]; ok && c != doc {
		fail("is %v, want %v", doc, c)
	}
	if e, ok := schema["enum"].([]any); ok && !slices.Contains(e, doc) {
		fail("is %v, want one of %v", doc, e)
	}
	switch schema["type"] {
	case "object":
		obj, ok := doc.(map[string]any)
		if !ok {
			fail("is not an object")
			return errs
		}
		props, _ := schema["properties"].(map[string]any)
		for _, r := range schema["required"].([]any) {
			if _, ok := obj[r.(string)]; !ok {
				fail("lacks required %q", r)
			}
		}
		for k, v := range obj {
			sub, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					fail("has unexpected %q", k)
				}
				continue
			}
			errs = append(errs, validate(sub, v, path+"."+k)...)
		}
	case "string":
		s, ok := doc.(string)
		if !ok {
			fail("is not a string")
			return errs
		}
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(s) {
			fail("%q does not match %s", s, p)
		}
	case "null":
		if doc != nil {
			fail("is %v, want null", doc)
		}
	case "integer":
		n, ok := doc.(float64)
		if !ok || n != float64(int64(n)) {
			fail("%v is not an integer", doc)
			return errs
		}
		if m, ok := schema["minimum"].(float64); ok && n < m {
			fail("%v is below %v", n, m)
		}
	case nil:
	default:
		fail("schema type %v is not supported by this validator", schema["type"])
	}
	return errs
}
