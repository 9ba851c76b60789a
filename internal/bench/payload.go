package bench

import (
	"strconv"
	"strings"
	"time"
)

// testCard is a sandbox test card (decisions.md section 12).
type testCard struct {
	number, cvv, holder string
}

// approveCards are captured by the sandboxes; declineCards are declined
// with CARD_DECLINED.
var (
	approveCards = []testCard{
		{"4242424242424242", "123", "Ada Lovelace"},
		{"5555555555554444", "321", "Grace Hopper"},
		{"378282246310005", "4321", "Alan Turing"},
	}
	declineCards = []testCard{
		{"4000000000000002", "123", "Edsger Dijkstra"},
		{"4000000000009995", "123", "Barbara Liskov"},
		{"4000000000000069", "123", "Donald Knuth"},
		{"4000000000000127", "123", "Frances Allen"},
	}
	amounts   = []string{"19.99", "42.00", "129.50", "7.25", "250.00"}
	countries = []struct{ country, city, postal, state string }{
		{"GB", "London", "N1 9GU", ""},
		{"FR", "Paris", "75011", ""},
		{"US", "Austin", "78701", "TX"},
		{"DE", "Berlin", "10115", ""},
	}
)

// refundAmount is the part of a payment an OpRefund refunds: every amount
// above is at least this much.
const refundAmount = "5.00"

// customerPool is how many distinct customers the clients pay as.
const customerPool = 500

// bodyTemplate is a payment body with three holes: the merchant reference
// (used twice: merchantRef and metadata.orderId) and the customer id. The
// constant parts are built once per card; a request only appends.
type bodyTemplate struct {
	parts [4]string // parts[0] customer parts[1] ref parts[2] ref parts[3]
}

// newBodyTemplate builds the template of one card, amount and address.
func newBodyTemplate(c testCard, amount, currency string, addr int) bodyTemplate {
	a := countries[addr%len(countries)]
	expYear := strconv.Itoa((time.Now().Year() + 3) % 100)
	if len(expYear) == 1 {
		expYear = "0" + expYear
	}
	first, last, _ := strings.Cut(c.holder, " ")
	state := ""
	if a.state != "" {
		state = `,"state":"` + a.state + `"`
	}
	head := `{"amount":"` + amount + `","currency":"` + currency + `","customerId":"`
	mid := `","card":{"number":"` + c.number + `","expiryMonth":"12","expiryYear":"` + expYear +
		`","cvv":"` + c.cvv + `","holderName":"` + c.holder + `"},` +
		`"billing":{"firstName":"` + first + `","lastName":"` + last +
		`","email":"` + strings.ToLower(first) + `@example.com","phone":"+441632960001","country":"` + a.country +
		`","address":"12 Analytical Row","city":"` + a.city + `","postalCode":"` + a.postal + `"` + state + `},` +
		`"merchantRef":"`
	return bodyTemplate{parts: [4]string{
		head,
		mid,
		`","metadata":{"orderId":"`,
		`","channel":"web","source":"paygate-bench","cart":"3 items"}}`,
	}}
}

// appendBody appends the body for one payment to dst.
func (t *bodyTemplate) appendBody(dst []byte, customer int, ref []byte) []byte {
	dst = append(dst, t.parts[0]...)
	dst = append(dst, "cust-"...)
	dst = strconv.AppendInt(dst, int64(customer), 10)
	dst = append(dst, t.parts[1]...)
	dst = append(dst, ref...)
	dst = append(dst, t.parts[2]...)
	dst = append(dst, ref...)
	dst = append(dst, t.parts[3]...)
	return dst
}

// tokenBody is the body of POST /v1/tokens for one card.
type tokenBody string

// appendTo appends the body to dst.
func (b tokenBody) appendTo(dst []byte) []byte { return append(dst, b...) }

// newTokenBody builds the token request of one card.
func newTokenBody(c testCard) tokenBody {
	expYear := strconv.Itoa((time.Now().Year() + 3) % 100)
	if len(expYear) == 1 {
		expYear = "0" + expYear
	}
	return tokenBody(`{"card":{"number":"` + c.number + `","expiryMonth":"12","expiryYear":"` + expYear +
		`","cvv":"` + c.cvv + `","holderName":"` + c.holder + `"}}`)
}

// templates holds every body template of a run.
type templates struct {
	approve, decline []bodyTemplate
	token            []tokenBody
}

func newTemplates(currency string) *templates {
	t := &templates{}
	for i, c := range approveCards {
		for j, a := range amounts {
			t.approve = append(t.approve, newBodyTemplate(c, a, currency, i+j))
		}
	}
	for i, c := range declineCards {
		t.decline = append(t.decline, newBodyTemplate(c, amounts[i%len(amounts)], currency, i))
	}
	for _, c := range approveCards {
		t.token = append(t.token, newTokenBody(c))
	}
	return t
}

// appendRefundBody appends the body of a partial refund of payment id.
func appendRefundBody(dst []byte, id, currency string) []byte {
	dst = append(dst, `{"transactionId":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","amount":"`+refundAmount+`","currency":"`...)
	dst = append(dst, currency...)
	dst = append(dst, `","reason":"paygate bench partial refund"}`...)
	return dst
}
