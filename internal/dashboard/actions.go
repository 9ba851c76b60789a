package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// The payment page's actions besides the refund itself (issue 22): capture
// and void of an authorized payment, a confirmation page before a void, and
// one before a refund that restates its amount and currency. Capture and
// void run through the payment service's idempotent-operation runner and its
// Capture and Void use cases, as the API's do, under a key minted when the
// form was rendered, so that a double submit acts once.

// confirmData is the confirmation page of a void or a refund.
type confirmData struct {
	P paygate.Payment
	// Action is "void" or "refund".
	Action string
	// Amount is the refund's amount as entered, Shown the same with the
	// currency's symbol and all its decimals ("KWD 1.500").
	Amount, Shown string
	Reason        string
	Key           string
	Error         string
}

// confirmVoid serves GET /payments/{id}/void: what a void does, and the
// button that does it.
func (d *Dashboard) confirmVoid(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	p, err := d.viewerPayment(r.Context(), v, params[0])
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	data := confirmData{P: p, Action: "void", Key: id.New()}
	if p.Status != paygate.PaymentAuthorized {
		data.Error = "This payment is " + string(p.Status) + "; only an authorized payment can be voided."
	}
	d.render(w, r, v, http.StatusOK, "payment_confirm", data)
}

// confirmRefund serves GET /payments/{id}/refund?amount=…: the refund's
// amount and currency restated, the reason, and the button that refunds.
// The reason is asked here, in the POST's form, so that it never travels in
// a URL.
func (d *Dashboard) confirmRefund(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	p, err := d.viewerPayment(r.Context(), v, params[0])
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	q := r.URL.Query()
	data := confirmData{P: p, Action: "refund", Amount: strings.TrimSpace(q.Get("amount")), Key: q.Get("idempotency_key")}
	if !id.Valid(data.Key) {
		data.Key = id.New()
	}
	remaining := max(p.AmountCaptured-p.AmountRefunded, 0)
	status := http.StatusOK
	switch m, perr := money.Parse(data.Amount, p.Amount.Currency); {
	case p.Status != paygate.PaymentCaptured || remaining == 0:
		data.Error, status = "Only a captured payment with something left to refund can be refunded.", http.StatusBadRequest
	case data.Amount == "":
		data.Error, status = "Enter the amount to refund.", http.StatusBadRequest
	case perr != nil:
		data.Error, status = "Amount: "+perr.Message, http.StatusBadRequest
	case m.Amount > remaining:
		data.Error, status = "The amount is more than the "+formatMinor(remaining, p.Amount.Currency)+" left to refund.", http.StatusBadRequest
	default:
		data.Shown = formatMinor(m.Amount, p.Amount.Currency)
	}
	d.render(w, r, v, status, "payment_confirm", data)
}

// viewerPayment reads a payment of the viewer's merchant and mode;
// NOT_FOUND for anything else.
func (d *Dashboard) viewerPayment(ctx context.Context, v *viewer, paymentID string) (paygate.Payment, error) {
	if !id.Valid(paymentID) {
		return paygate.Payment{}, paygate.Errorf(paygate.CodeNotFound, "", "no such payment")
	}
	p, err := d.store.PaymentByID(ctx, v.User.MerchantID, v.Mode, strings.ToLower(paymentID))
	if err != nil {
		return paygate.Payment{}, fmt.Errorf("read payment: %w", err)
	}
	return p, nil
}

// capturePayment serves POST /payments/{id}/capture: captures the
// authorized payment, all of it or the amount of the form.
func (d *Dashboard) capturePayment(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	d.settlePayment(w, r, v, params[0], paygate.PaymentCaptured)
}

// voidPayment serves POST /payments/{id}/void.
func (d *Dashboard) voidPayment(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	d.settlePayment(w, r, v, params[0], paygate.PaymentVoided)
}

// settlePayment captures (to = captured) or voids (to = voided) an
// authorized payment through the payment service, audits it, and shows the
// payment again with what happened.
func (d *Dashboard) settlePayment(w http.ResponseWriter, r *http.Request, v *viewer, paymentID string, to paygate.PaymentStatus) {
	ctx := r.Context()
	p, err := d.viewerPayment(ctx, v, paymentID)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	verb, action, path := "capture", paygate.AuditPaymentCaptured, "/capture"
	if to == paygate.PaymentVoided {
		verb, action, path = "void", paygate.AuditPaymentVoided, "/void"
	}
	amount := strings.TrimSpace(r.PostFormValue("amount"))
	if to == paygate.PaymentVoided {
		amount = ""
	}
	key := r.PostFormValue("idempotency_key")
	refused := func(msg string) {
		data, err := d.loadPayment(ctx, v, p.ID)
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		data.ActionError = msg
		d.render(w, r, v, http.StatusBadRequest, "payment", data)
	}
	if !id.Valid(key) {
		refused("The form has expired; reload the page and try again.")
		return
	}
	out, err := d.payments.Run(ctx, payment.IdempotentRequest{
		MerchantID: p.MerchantID, Mode: p.Mode, Key: refundKeyPrefix + strings.ToLower(key),
		Method: http.MethodPost, Path: "/v1/payments/" + p.ID + path,
		Body: func() ([]byte, error) {
			if amount == "" {
				return []byte("{}"), nil
			}
			return json.Marshal(map[string]string{"amount": amount})
		},
	}, func([]byte) (payment.Operation, error) {
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			if to == paygate.PaymentVoided {
				return d.payments.Void(ctx, req, p.ID)
			}
			return d.payments.Capture(ctx, req, payment.CaptureInput{PaymentID: p.ID, AmountText: amount})
		}, nil
	})
	var pe *paygate.Error
	var re *payment.ReleaseError
	switch {
	case errors.As(err, &re):
		d.fail(w, r, v, errors.Join(re.Err, fmt.Errorf("release %s key: %w", verb, re.Release)))
	case errors.Is(err, payment.ErrInFlight):
		refused("This " + verb + " is still being processed. Reload the page in a moment to see it.")
	case paygate.ErrorCode(err) == paygate.CodeDuplicateRequest:
		refused("This form was already submitted with other values. Reload the page before trying again.")
	case errors.As(err, &pe) && pe.Code != paygate.CodeInternal && pe.Code != paygate.CodeServiceUnavailable:
		refused(capitalize(refundMessage(pe)) + ".")
	case err != nil:
		d.fail(w, r, v, fmt.Errorf("%s: %w", verb, err))
	default:
		// A provider's refusal is a stored answer too (502): the payment
		// stays authorized, and only a move is audited.
		if now, err := d.viewerPayment(ctx, v, p.ID); err == nil && !out.Replayed && now.Status == to {
			detail := "payment " + p.ID
			if to == paygate.PaymentCaptured {
				detail = formatMinor(p.Amount.Amount, p.Amount.Currency) + " authorized, " + detail
				if amount != "" {
					detail = amount + " " + p.Amount.Currency + " of " + detail
				}
			}
			d.audit(ctx, r, v, v.Mode, action, p.ID, detail)
		}
		http.Redirect(w, r, modePath(v, "/payments/"+p.ID)+"?"+url.Values{"done": {verb}}.Encode(), http.StatusSeeOther)
	}
}
