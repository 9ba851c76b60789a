package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// timeFormat is RFC 3339 in UTC with milliseconds, used for every time the
// API shows.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// statusOf is the one table from error code to HTTP status.
var statusOf = map[paygate.Code]int{
	paygate.CodeInvalidRequest:     http.StatusBadRequest,
	paygate.CodeBodyTooLarge:       http.StatusRequestEntityTooLarge,
	paygate.CodeUnauthorized:       http.StatusUnauthorized,
	paygate.CodeNotFound:           http.StatusNotFound,
	paygate.CodeMethodNotAllowed:   http.StatusMethodNotAllowed,
	paygate.CodeDuplicateRequest:   http.StatusConflict,
	paygate.CodeRateLimited:        http.StatusTooManyRequests,
	paygate.CodeCardDeclined:       http.StatusBadRequest,
	paygate.CodeProviderError:      http.StatusBadGateway,
	paygate.CodeInternal:           http.StatusInternalServerError,
	paygate.CodeServiceUnavailable: http.StatusServiceUnavailable,
}

// nameOf maps codes that share a public name.
func nameOf(c paygate.Code) string {
	if c == paygate.CodeBodyTooLarge {
		return string(paygate.CodeInvalidRequest)
	}
	return string(c)
}

type envelope struct {
	Data  any        `json:"data"`
	Error *errorBody `json:"error,omitempty"`
	Meta  *metaBody  `json:"meta,omitempty"`
}

type errorBody struct {
	Status        int    `json:"status"`
	Name          string `json:"name"`
	Message       string `json:"message"`
	Param         string `json:"param,omitempty"`
	TransactionID string `json:"transactionId,omitempty"`
	DeclineCode   string `json:"declineCode,omitempty"`
}

type metaBody struct {
	Timestamp string `json:"timestamp"`
}

// publicError turns any error into what a client may see. Errors that are
// not *paygate.Error become INTERNAL_ERROR with a generic message; the
// caller logs the original.
func publicError(err error) *paygate.Error {
	var e *paygate.Error
	if errors.As(err, &e) {
		return e
	}
	return &paygate.Error{Code: paygate.CodeInternal, Message: "an internal error occurred"}
}

func errorEnvelope(e *paygate.Error) (int, envelope) {
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return status, envelope{Error: &errorBody{
		Status: status, Name: nameOf(e.Code), Message: e.Message, Param: e.Param,
		TransactionID: e.TransactionID, DeclineCode: e.DeclineCode,
	}}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value rendered here is built of strings, numbers and raw
		// JSON that was validated on the way in.
		panic("httpapi: marshal response: " + err.Error())
	}
	return b
}

// writeRaw writes a complete JSON body. Every JSON answer, replays
// included, is private to its client and is not to be content-sniffed
// (decisions §15).
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// --- resources as the API shows them ---

type paymentRecord struct {
	ID             string  `json:"id"`
	MerchantID     string  `json:"merchantId"`
	CustomerID     string  `json:"customerId"`
	ProviderID     *string `json:"providerId"`
	Status         string  `json:"status"`
	Amount         string  `json:"amount"`
	Currency       string  `json:"currency"`
	PaymentMethod  string  `json:"paymentMethod"`
	MerchantRef    *string `json:"merchantRef"`
	ErrorCode      *string `json:"errorCode"`
	ErrorMessage   *string `json:"errorMessage"`
	DeclineCode    *string `json:"declineCode"`
	AmountCaptured string  `json:"amountCaptured"`
	AmountRefunded string  `json:"amountRefunded"`
	StoredCardID   string  `json:"storedCardId,omitempty"`
	CreatedAt      string  `json:"createdAt"`
	UpdatedAt      string  `json:"updatedAt"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func paymentResponse(p paygate.Payment) paymentRecord {
	return paymentRecord{
		ID: p.ID, MerchantID: p.MerchantID, CustomerID: p.CustomerID,
		ProviderID: nullable(p.ProviderID), Status: string(p.Status),
		Amount: p.AmountText, Currency: p.Amount.Currency, PaymentMethod: string(p.Method),
		MerchantRef: nullable(p.MerchantRef), ErrorCode: nullable(p.ErrorCode),
		ErrorMessage: nullable(p.ErrorMessage), DeclineCode: nullable(p.DeclineCode),
		AmountCaptured: money.Format(p.AmountCaptured, p.Amount.Currency),
		AmountRefunded: money.Format(p.AmountRefunded, p.Amount.Currency),
		StoredCardID:   p.StoredCardID,
		CreatedAt:      formatTime(p.CreatedAt), UpdatedAt: formatTime(p.UpdatedAt),
	}
}

type threeDsData struct {
	RedirectURL string            `json:"redirectUrl"`
	Method      string            `json:"method"`
	Parameters  map[string]string `json:"parameters"`
}

type creationResult struct {
	ID              string       `json:"id"`
	Status          string       `json:"status"`
	Amount          string       `json:"amount"`
	Currency        string       `json:"currency"`
	Provider        *string      `json:"provider"`
	ThreeDsRequired bool         `json:"threeDsRequired"`
	ThreeDsData     *threeDsData `json:"threeDsData"`
	StoredCardID    string       `json:"storedCardId,omitempty"`
	CreatedAt       string       `json:"createdAt"`
}

type refundRecord struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	Amount        string `json:"amount"`
	Currency      string `json:"currency"`
	Status        string `json:"status"`
	Reason        string `json:"reason,omitempty"`
	// Why a failed refund failed; null on other refunds (decisions §15).
	ErrorCode    *string `json:"errorCode"`
	ErrorMessage *string `json:"errorMessage"`
	CreatedAt    string  `json:"createdAt"`
	UpdatedAt    string  `json:"updatedAt"`
}

func refundResponse(r paygate.Refund) refundRecord {
	return refundRecord{
		ID: r.ID, TransactionID: r.PaymentID, Amount: r.AmountText, Currency: r.Amount.Currency,
		Status: string(r.Status), Reason: r.Reason,
		ErrorCode: nullable(r.ErrorCode), ErrorMessage: nullable(r.ErrorMessage),
		CreatedAt: formatTime(r.CreatedAt), UpdatedAt: formatTime(r.UpdatedAt),
	}
}

type customerRecord struct {
	ID         string          `json:"id"`
	ExternalID string          `json:"externalId"`
	Email      string          `json:"email,omitempty"`
	Metadata   json.RawMessage `json:"metadata"`
	CreatedAt  string          `json:"createdAt"`
}

func customerResponse(c paygate.Customer) customerRecord {
	md := json.RawMessage(c.Metadata)
	if len(md) == 0 {
		md = json.RawMessage("{}")
	}
	return customerRecord{ID: c.ID, ExternalID: c.ExternalID, Email: c.Email, Metadata: md, CreatedAt: formatTime(c.CreatedAt)}
}

// Encoder renders the answers the payment service stores under idempotency
// keys. Its bytes are exactly what the first request and every replay get.
type Encoder struct{}

var _ payment.Encoder = Encoder{}

// Encode renders a use case's result: 201 with the creation result (202
// while the payment is still created, its outcome unknown), 400
// CARD_DECLINED, 502 PROVIDER_ERROR, 200 with the payment record after a
// capture or void, 201 with the refund, customer or stored card.
func (Encoder) Encode(r payment.Result) payment.Answer {
	switch r.Kind {
	case payment.PaymentCreated:
		return paymentCreated(*r.Payment, r.ThreeDS)
	case payment.PaymentDeclined:
		p := r.Payment
		return errorAnswer(&paygate.Error{Code: paygate.CodeCardDeclined, Message: p.ErrorMessage, TransactionID: p.ID, DeclineCode: p.DeclineCode})
	case payment.PaymentProviderError:
		return errorAnswer(&paygate.Error{Code: paygate.CodeProviderError, Message: r.Message, TransactionID: r.Payment.ID})
	case payment.PaymentUpdated:
		return payment.Answer{Status: http.StatusOK, Body: mustJSON(envelope{Data: paymentResponse(*r.Payment)})}
	case payment.RefundCreated:
		return created(refundResponse(*r.Refund))
	case payment.CustomerSaved:
		return created(customerResponse(*r.Customer))
	case payment.CardStored:
		return created(storedCardResponse(*r.StoredCard))
	}
	panic(fmt.Sprintf("httpapi: no answer for result kind %d", r.Kind))
}

// ResourceID returns the id in an answer's data ("" for an error answer).
func (Encoder) ResourceID(a payment.Answer) string {
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(a.Body, &env) != nil {
		return ""
	}
	return env.Data.ID
}

func created(data any) payment.Answer {
	return payment.Answer{Status: http.StatusCreated, Body: mustJSON(envelope{Data: data})}
}

func errorAnswer(e *paygate.Error) payment.Answer {
	status, env := errorEnvelope(e)
	return payment.Answer{Status: status, Body: mustJSON(env)}
}

// paymentCreated renders 201 with the creation result, or 202 while the
// payment is still created (the provider's answer is unknown).
func paymentCreated(p paygate.Payment, tds *paygate.ThreeDSAction) payment.Answer {
	res := creationResult{
		ID: p.ID, Status: string(p.Status), Amount: p.AmountText, Currency: p.Amount.Currency,
		Provider: nullable(p.ProviderID), StoredCardID: p.StoredCardID, CreatedAt: formatTime(p.CreatedAt),
	}
	if tds != nil {
		params := tds.Parameters
		if params == nil {
			params = map[string]string{}
		}
		res.ThreeDsRequired = true
		res.ThreeDsData = &threeDsData{RedirectURL: tds.RedirectURL, Method: tds.Method, Parameters: params}
	}
	status := http.StatusCreated
	if p.Status == paygate.PaymentCreated {
		status = http.StatusAccepted
	}
	return payment.Answer{Status: status, Body: mustJSON(envelope{Data: res})}
}
