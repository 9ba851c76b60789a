package httpapi

import (
	"bytes"
	"encoding/json"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/currency"
	"golang.org/x/text/language"

	"github.com/paygate/paygate/internal/card"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// Limits of the request fields. The first group is the specification's and
// decisions.md's; the second has no number in either and is chosen here so
// that no text field is unbounded (generous for real data).
const (
	maxCustomerID        = 255
	maxExternalID        = 255
	maxMerchantRef       = 255
	maxDeviceFingerprint = 128
	cardNumberMin        = 13
	cardNumberMax        = 19
	expiryCenturyBase    = 2000 // a two-digit expiryYear YY means 20YY
	maxHolderName        = 100
	minPhone, maxPhone   = 5, 32
	maxMetadataKeys      = 50
	maxMetadataKey       = 40
	maxMetadataBytes     = 8 << 10

	maxBillingName = 100 // firstName, lastName
	maxEmail       = 254 // the RFC 5321 path limit
	maxAddressLine = 255 // address, addressLine2
	maxCity        = 100
	maxPostalCode  = 20
	maxState       = 100
	maxReturnURL   = 2048
	minDOBYear     = 1900
)

// validate checks a payment request against every rule of the
// specification's POST /v1/payments tables and decisions.md sections 3, 7, 8
// and 13, in the order of the tables (a nested object's fields where the
// object comes), and returns the first failure. now decides whether the
// card has expired and whether dob is in the past; clientIP (the request's
// peer address) is billing.ipAddress when billing is present without one
// and the peer is IPv4.
func (r *paymentRequest) validate(now time.Time, clientIP string) (payment.CreateInput, *paygate.Error) {
	var in payment.CreateInput
	amount, e := amountInCurrency(r.Amount, r.Currency)
	if e != nil {
		return in, e
	}
	in.Amount, in.AmountText = amount, r.Amount

	switch paygate.PaymentMethod(r.PaymentMethod) {
	case "", paygate.MethodCard:
		in.Method = paygate.MethodCard
	case paygate.MethodStoredCard:
		in.Method = paygate.MethodStoredCard
	case paygate.MethodToken:
		in.Method = paygate.MethodToken
	default:
		return in, fieldError("paymentMethod", "paymentMethod must be card, stored_card or token")
	}

	if e := checkText("customerId", r.CustomerID, true, maxCustomerID); e != nil {
		return in, e
	}
	in.CustomerExternalID = r.CustomerID

	switch in.Method {
	case paygate.MethodToken:
		// A token's card was validated when it was tokenized (decisions
		// §19); saveCard stores it as a card payment's.
		if r.Card != nil {
			return in, fieldError("card", "card must not be sent with paymentMethod token")
		}
		if r.StoredCardID != "" {
			return in, fieldError("storedCardId", "storedCardId is only allowed with paymentMethod stored_card")
		}
		if r.Token == "" {
			return in, fieldError("token", "token is required for paymentMethod token")
		}
		if !payment.ValidTokenID(r.Token) {
			return in, fieldError("token", "token must be a token id (tok_…)")
		}
		in.TokenID = r.Token
	case paygate.MethodCard:
		if r.Card == nil {
			return in, fieldError("card", "card is required for paymentMethod card")
		}
		c, e := r.Card.validate(now, true)
		if e != nil {
			return in, e
		}
		in.Card = &c
		if r.StoredCardID != "" {
			return in, fieldError("storedCardId", "storedCardId is only allowed with paymentMethod stored_card")
		}
	default:
		if r.Card != nil {
			return in, fieldError("card", "card must not be sent with paymentMethod stored_card")
		}
		if r.StoredCardID == "" {
			return in, fieldError("storedCardId", "storedCardId is required for paymentMethod stored_card")
		}
		id, ok := canonicalUUID(r.StoredCardID)
		if !ok {
			return in, fieldError("storedCardId", "storedCardId must be a UUID")
		}
		in.StoredCardID = id
		if r.SaveCard {
			return in, fieldError("saveCard", "saveCard is only allowed with paymentMethod card or token")
		}
	}
	if r.Token != "" && in.Method != paygate.MethodToken {
		return in, fieldError("token", "token is only allowed with paymentMethod token")
	}

	if r.Billing != nil {
		b, e := r.Billing.validate(now, clientIP)
		if e != nil {
			return in, e
		}
		in.Billing = &b
	}

	if e := checkText("merchantRef", r.MerchantRef, false, maxMerchantRef); e != nil {
		return in, e
	}
	in.MerchantRef = r.MerchantRef

	if r.ReturnURL != "" {
		if e := checkReturnURL(r.ReturnURL); e != nil {
			return in, e
		}
	}
	in.ReturnURL = r.ReturnURL

	if e := checkText("deviceFingerprint", r.DeviceFingerprint, false, maxDeviceFingerprint); e != nil {
		return in, e
	}
	in.DeviceFingerprint = r.DeviceFingerprint

	md, e := checkMetadata(r.Metadata)
	if e != nil {
		return in, e
	}
	in.Metadata = md
	in.SaveCard = r.SaveCard
	return in, nil
}

// validate checks a card: number 13–19 digits passing Luhn, expiryMonth
// "01"–"12", expiryYear two digits (20YY) not in the past, cvv 4 digits for
// American Express and 3 for every other brand (decisions §15; required
// when withCVV, refused otherwise: a stored card never has one),
// holderName 1–100 characters. Params are card.number and so on; an expired
// card is card.expiryYear.
func (c *cardRequest) validate(now time.Time, withCVV bool) (paygate.Card, *paygate.Error) {
	var out paygate.Card
	switch {
	case c.Number == "":
		return out, fieldError("card.number", "card.number is required")
	case len(c.Number) < cardNumberMin || len(c.Number) > cardNumberMax || !allDigits(c.Number):
		return out, fieldError("card.number", "card.number must be 13 to 19 digits")
	case !card.Luhn(c.Number):
		return out, fieldError("card.number", "card.number is not a valid card number")
	}
	out.Number = paygate.PAN(c.Number)

	switch {
	case c.ExpiryMonth == "":
		return out, fieldError("card.expiryMonth", "card.expiryMonth is required")
	case len(c.ExpiryMonth) != 2 || !allDigits(c.ExpiryMonth) || c.ExpiryMonth < "01" || c.ExpiryMonth > "12":
		return out, fieldError("card.expiryMonth", "card.expiryMonth must be two digits, 01 to 12")
	}
	out.ExpMonth = twoDigits(c.ExpiryMonth)

	switch {
	case c.ExpiryYear == "":
		return out, fieldError("card.expiryYear", "card.expiryYear is required")
	case len(c.ExpiryYear) == 4 && allDigits(c.ExpiryYear):
		return out, fieldError("card.expiryYear", "card.expiryYear must be two digits (YY), not four")
	case len(c.ExpiryYear) != 2 || !allDigits(c.ExpiryYear):
		return out, fieldError("card.expiryYear", "card.expiryYear must be two digits (YY)")
	}
	out.ExpYear = expiryCenturyBase + twoDigits(c.ExpiryYear)
	if card.Expired(out.ExpMonth, out.ExpYear, now) {
		return out, fieldError("card.expiryYear", "the card has expired")
	}

	if withCVV {
		switch {
		case c.CVV == "":
			return out, fieldError("card.cvv", "card.cvv is required")
		case card.Brand(c.Number) == card.BrandAmex:
			if len(c.CVV) != 4 || !allDigits(c.CVV) {
				return out, fieldError("card.cvv", "card.cvv must be 4 digits for American Express")
			}
		case len(c.CVV) != 3 || !allDigits(c.CVV):
			return out, fieldError("card.cvv", "card.cvv must be 3 digits")
		}
		out.CVV = paygate.CVV(c.CVV)
	} else if c.CVV != "" {
		return out, fieldError("card.cvv", "card.cvv must not be sent: it is never stored")
	}

	if e := checkFreeText("card.holderName", c.HolderName, true, maxHolderName); e != nil {
		return out, e
	}
	out.HolderName = c.HolderName
	return out, nil
}

// validate checks a billing object (decisions.md section 8). country is
// returned upper-cased; ipAddress defaults to clientIP when that is IPv4.
func (b *billingRequest) validate(now time.Time, clientIP string) (paygate.Billing, *paygate.Error) {
	var out paygate.Billing
	if e := checkFreeText("billing.firstName", b.FirstName, false, maxBillingName); e != nil {
		return out, e
	}
	if e := checkFreeText("billing.lastName", b.LastName, false, maxBillingName); e != nil {
		return out, e
	}
	if e := checkFreeEmail("billing.email", b.Email, true); e != nil {
		return out, e
	}
	if e := checkPhone("billing.phone", b.Phone); e != nil {
		return out, e
	}
	country, e := countryCode("billing.country", b.Country)
	if e != nil {
		return out, e
	}
	if e := checkFreeText("billing.address", b.Address, true, maxAddressLine); e != nil {
		return out, e
	}
	if e := checkFreeText("billing.addressLine2", b.AddressLine2, false, maxAddressLine); e != nil {
		return out, e
	}
	if e := checkFreeText("billing.city", b.City, true, maxCity); e != nil {
		return out, e
	}
	if e := checkFreeText("billing.postalCode", b.PostalCode, true, maxPostalCode); e != nil {
		return out, e
	}
	stateRequired := country == "US" || country == "CA"
	if stateRequired && strings.TrimSpace(b.State) == "" {
		return out, fieldError("billing.state", "billing.state is required when billing.country is %s", country)
	}
	if e := checkFreeText("billing.state", b.State, false, maxState); e != nil {
		return out, e
	}
	ip := b.IPAddress
	if ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil || !a.Is4() {
			return out, fieldError("billing.ipAddress", "billing.ipAddress must be an IPv4 address")
		}
	} else {
		ip = defaultIPv4(clientIP)
	}
	if b.DOB != "" {
		if e := checkDOB("billing.dob", b.DOB, now); e != nil {
			return out, e
		}
	}
	if b.Gender != "" && b.Gender != "M" && b.Gender != "F" {
		return out, fieldError("billing.gender", "billing.gender must be M or F")
	}
	return paygate.Billing{
		FirstName:    b.FirstName,
		LastName:     b.LastName,
		Email:        b.Email,
		Phone:        b.Phone,
		Country:      country,
		Address:      b.Address,
		AddressLine2: b.AddressLine2,
		City:         b.City,
		PostalCode:   b.PostalCode,
		State:        b.State,
		IPAddress:    ip,
		DOB:          b.DOB,
		Gender:       b.Gender,
	}, nil
}

// validate checks a refund request and returns it with the request's
// currency (upper-cased), which the store compares with the payment's. A
// transactionId that is not a UUID is INVALID_REQUEST here, not NOT_FOUND:
// it is a malformed body field, not a path.
func (r *refundRequest) validate() (payment.RefundInput, string, *paygate.Error) {
	var in payment.RefundInput
	if r.TransactionID == "" {
		return in, "", fieldError("transactionId", "transactionId is required")
	}
	id, ok := canonicalUUID(r.TransactionID)
	if !ok {
		return in, "", fieldError("transactionId", "transactionId must be a UUID")
	}
	amount, e := amountInCurrency(r.Amount, r.Currency)
	if e != nil {
		return in, "", e
	}
	if in, e = payment.NewRefundInput(id, amount, r.Amount, r.Reason); e != nil {
		return in, "", e
	}
	return in, amount.Currency, nil
}

// validate checks a customer upsert. email and metadata are nil when absent
// (the stored values stay); metadata is returned as compact JSON.
func (r *customerRequest) validate() (externalID string, email *string, metadata []byte, err *paygate.Error) {
	if e := checkText("externalId", r.ExternalID, true, maxExternalID); e != nil {
		return "", nil, nil, e
	}
	if r.Email != nil {
		if e := checkFreeEmail("email", *r.Email, true); e != nil {
			return "", nil, nil, e
		}
		v := *r.Email
		email = &v
	}
	md, e := checkMetadata(r.Metadata)
	if e != nil {
		return "", nil, nil, e
	}
	return r.ExternalID, email, md, nil
}

// validate checks a capture request. amountText is "" for a capture of the
// whole authorized amount; otherwise its syntax and range are checked here
// and its decimals against the payment's currency by the use case, which
// knows the currency.
func (r *captureRequest) validate() (amountText string, err *paygate.Error) {
	if r.Amount == nil {
		return "", nil
	}
	if *r.Amount == "" {
		return "", fieldError("amount", "amount must not be empty; leave it out to capture the whole amount")
	}
	if e := money.ParseSyntax(*r.Amount); e != nil {
		return "", e
	}
	return *r.Amount, nil
}

// validate checks a card to be stored: the rules of a payment's card, and a
// cvv is refused (param card.cvv) because it is never stored.
func (r *storedCardRequest) validate(now time.Time) (paygate.Card, *paygate.Error) {
	if r.Card == nil {
		return paygate.Card{}, fieldError("card", "card is required")
	}
	return r.Card.validate(now, false)
}

// fieldError is INVALID_REQUEST blaming one field. The message must name
// the field and never contain its value.
func fieldError(param, format string, args ...any) *paygate.Error {
	return paygate.Errorf(paygate.CodeInvalidRequest, param, format, args...)
}

// amountInCurrency checks amount and currency in table order: amount
// present and well-formed (param amount), currency present and a current
// ISO 4217 currency (param currency, upper-cased first), then the amount's
// decimals against the currency (param amount).
func amountInCurrency(amount, cur string) (paygate.Money, *paygate.Error) {
	if amount == "" {
		return paygate.Money{}, fieldError("amount", "amount is required")
	}
	if e := money.ParseSyntax(amount); e != nil {
		return paygate.Money{}, e
	}
	if cur == "" {
		return paygate.Money{}, fieldError("currency", "currency is required")
	}
	return money.Parse(amount, strings.ToUpper(cur))
}

// checkText checks a single-line text field: required (not blank) when
// required, at most max characters (runes), no control characters.
func checkText(param, s string, required bool, maxLen int) *paygate.Error {
	if s == "" || strings.TrimSpace(s) == "" {
		if required {
			return fieldError(param, "%s is required", param)
		}
		if s == "" {
			return nil
		}
	}
	if utf8.RuneCountInString(s) > maxLen {
		return fieldError(param, "%s must be at most %d characters", param, maxLen)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fieldError(param, "%s must not contain control characters", param)
		}
	}
	return nil
}

// checkFreeText is checkText for text where no card number belongs
// (decisions §15): one that holds a card number is refused, param the
// field.
func checkFreeText(param, s string, required bool, maxLen int) *paygate.Error {
	if e := checkText(param, s, required, maxLen); e != nil {
		return e
	}
	if card.ContainsNumber(s) {
		return cardNumberError(param)
	}
	return nil
}

// checkFreeEmail is checkEmail refusing a card number as checkFreeText
// does: an address's local part may be all digits.
func checkFreeEmail(param, s string, required bool) *paygate.Error {
	if e := checkEmail(param, s, required); e != nil {
		return e
	}
	if card.ContainsNumber(s) {
		return cardNumberError(param)
	}
	return nil
}

// cardNumberError refuses a card number in a field where none belongs.
// The message names the field, never the number.
func cardNumberError(param string) *paygate.Error {
	return fieldError(param, "card numbers do not belong in %s", param)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// twoDigits is the value of a two-digit string already checked by
// allDigits.
func twoDigits(s string) int { return int(s[0]-'0')*10 + int(s[1]-'0') }

// canonicalUUID reports whether s is a UUID in the 36-character hyphenated
// form (either case) and returns it lower-cased. Other forms uuid.Parse
// accepts (braces, urn:uuid:, no hyphens) are refused.
func canonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// checkEmail accepts a plain address as net/mail parses it (local@domain,
// no display name, no comments, no quoted local part) with sane limits: at
// most 254 characters, a local part of at most 64, and a domain name of at
// least two labels of letters, digits and hyphens, the last not numeric (no
// IP literals).
func checkEmail(param, s string, required bool) *paygate.Error {
	if s == "" {
		if required {
			return fieldError(param, "%s is required", param)
		}
		return nil
	}
	if !validEmail(s) {
		return fieldError(param, "%s must be a valid email address", param)
	}
	return nil
}

func validEmail(s string) bool {
	if len(s) > maxEmail {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 || at > 64 {
		return false
	}
	return validDomain(s[at+1:])
}

// validDomain checks a host name: labels of 1–63 letters, digits or
// hyphens, not starting or ending with a hyphen, at least two of them, the
// last (the top-level domain) not all digits.
func validDomain(d string) bool {
	if len(d) > 253 {
		return false
	}
	if !strings.Contains(d, ".") {
		return false
	}
	var l string
	for rest, more := d, true; more; {
		l, rest, more = strings.Cut(rest, ".")
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return false
			}
		}
	}
	return !allDigits(l) // the top-level domain
}

// checkPhone: 5–32 characters of digits, spaces and + - ( ), at least one
// of them a digit.
func checkPhone(param, s string) *paygate.Error {
	if strings.TrimSpace(s) == "" {
		return fieldError(param, "%s is required", param)
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == ' ' || c == '+' || c == '-' || c == '(' || c == ')':
		default:
			return fieldError(param, "%s may contain only digits, spaces and + - ( )", param)
		}
	}
	if len(s) < minPhone || len(s) > maxPhone || digits == 0 {
		return fieldError(param, "%s must be %d to %d characters with the country code", param, minPhone, maxPhone)
	}
	return nil
}

// countryCode upper-cases s and checks that it is an ISO 3166-1 alpha-2
// code in use.
func countryCode(param, s string) (string, *paygate.Error) {
	if s == "" {
		return "", fieldError(param, "%s is required", param)
	}
	if len(s) == 2 {
		a, b := s[0]&^0x20, s[1]&^0x20 // ASCII upper-case; non-letters fail below
		if a >= 'A' && a <= 'Z' && b >= 'A' && b <= 'Z' && isoCountries()[int(a-'A')*26+int(b-'A')] {
			return string([]byte{a, b}), nil
		}
	}
	return "", fieldError(param, "%s must be an ISO 3166-1 alpha-2 country code", param)
}

// isoCountries is the set of assigned ISO 3166-1 alpha-2 codes, indexed by
// (first letter)*26 + second letter, derived once from x/text's region
// data. language.ParseRegion alone is too lenient: it accepts M.49 numbers
// ("276" is DE), and IsCountry is also true for codes that are not
// assigned ISO 3166-1 codes. Those are told apart by what x/text knows of
// them:
//   - deprecated aliases canonicalize to another code (UK → GB, BU → MM,
//     ZR → CD, FX → FR);
//   - codes CLDR uses without an ISO 3166 numeric code (EZ, UN, EA, IC, AC,
//     CP, DG, TA, CQ) or with a private-use one (XK, 983) are refused;
//   - codes deleted from ISO 3166-1 without a single successor (AN, CS, NT,
//     SU, YU) are the ones where no currency is in use today.
//
// Groups (EU, 001, 419) and the user-assigned ZZ are not countries at
// all. The result has the 249 codes of ISO 3166-1.
var isoCountries = sync.OnceValue(func() *[26 * 26]bool {
	var set [26 * 26]bool
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			code := string([]byte{a, b})
			r, err := language.ParseRegion(code)
			if err != nil || !r.IsCountry() || r.String() != code || r.Canonicalize() != r {
				continue
			}
			if m := r.M49(); m <= 0 || m >= 900 || r.ISO3() == "ZZZ" {
				continue
			}
			if !currency.Query(currency.Region(r), currency.NonTender).Next() {
				continue
			}
			set[int(a-'A')*26+int(b-'A')] = true
		}
	}
	return &set
})

// defaultIPv4 returns clientIP when it is an IPv4 address (or IPv4 mapped
// into IPv6), and "" otherwise: billing.ipAddress is IPv4 only, so a client
// connected over IPv6 leaves it empty rather than filled with an address of
// the wrong kind.
func defaultIPv4(clientIP string) string {
	a, err := netip.ParseAddr(clientIP)
	if err == nil && a.Is4() {
		return clientIP // already in canonical dotted form: ParseAddr is strict
	}
	if err != nil {
		ap, err := netip.ParseAddrPort(clientIP)
		if err != nil {
			return ""
		}
		a = ap.Addr()
	}
	a = a.Unmap()
	if !a.Is4() {
		return ""
	}
	return a.String()
}

// checkDOB: a real calendar date YYYY-MM-DD, before today (UTC), not before
// 1900.
func checkDOB(param, s string, now time.Time) *paygate.Error {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) {
		return fieldError(param, "%s must be a date YYYY-MM-DD", param)
	}
	y, m, day := now.UTC().Date()
	today := time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
	if !d.Before(today) || d.Year() < minDOBYear {
		return fieldError(param, "%s must be a date in the past", param)
	}
	return nil
}

// checkReturnURL: an absolute http or https URL with a host, no user
// information, no spaces or control characters, at most 2048 characters.
func checkReturnURL(s string) *paygate.Error {
	const param = "returnUrl"
	bad := func() *paygate.Error {
		return fieldError(param, "returnUrl must be an absolute http or https URL")
	}
	if len(s) > maxReturnURL {
		return fieldError(param, "returnUrl must be at most %d characters", maxReturnURL)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return bad()
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return bad()
	}
	return nil
}

// checkMetadata checks metadata (decisions.md section 7): absent or null is
// nil; otherwise a JSON object of at most 50 keys, each 1–40 characters
// and not repeated, at most 8 KiB as compact JSON; values may be any JSON
// but a card number (decisions §15: in a string, decoded, or a number, at any depth,
// param metadata.<key>). A key that is a card number is param metadata, so
// that the error does not show the key. Every other breach is param
// metadata. It returns the compact object. raw comes from decodeJSON, so it
// is valid JSON.
func checkMetadata(raw json.RawMessage) ([]byte, *paygate.Error) {
	const param = "metadata"
	if raw == nil {
		return nil, nil
	}
	if !json.Valid(raw) || raw[0] != '{' {
		return nil, fieldError(param, "metadata must be a JSON object")
	}
	var seenBuf [maxMetadataKeys]string
	seen := seenBuf[:0]
	w := jsonWalker{data: raw, pos: 1}
	for {
		w.skipSpace()
		if w.peek() != '"' {
			break // the closing '}'
		}
		key, ok := jsonString(w.value())
		if !ok {
			return nil, fieldError(param, "metadata must be a JSON object")
		}
		if card.ContainsNumber(key) {
			return nil, cardNumberError(param)
		}
		if n := utf8.RuneCountInString(key); n < 1 || n > maxMetadataKey {
			return nil, fieldError(param, "metadata keys must be 1 to %d characters", maxMetadataKey)
		}
		if slices.Contains(seen, key) {
			return nil, fieldError(param, "metadata must not repeat a key")
		}
		if len(seen) == maxMetadataKeys {
			return nil, fieldError(param, "metadata must have at most %d keys", maxMetadataKeys)
		}
		seen = append(seen, key)
		w.skipSpace()
		w.pos++ // the ':'
		w.skipSpace()
		if jsonHoldsCardNumber(w.value()) {
			return nil, cardNumberError(param + "." + safeFieldName(key))
		}
		w.skipSpace()
		if w.peek() == ',' {
			w.pos++
		}
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fieldError(param, "metadata must be a JSON object")
	}
	if buf.Len() > maxMetadataBytes {
		return nil, fieldError(param, "metadata must be at most %d bytes as JSON", maxMetadataBytes)
	}
	return buf.Bytes(), nil
}

// jsonHoldsCardNumber reports whether a card number (card.ContainsNumber)
// is in a string or a number of v, a valid JSON value, at any depth, keys
// of nested objects included. Each string is scanned as its decoded text,
// never as JSON text, so that an escape ("\u0034242…") cannot hide a
// number; each number is scanned as written and, when it is an integer,
// as its value in decimal (integerDigits), so that an exponent
// (4.242424242424242e15) cannot hide one either. It reads v once and
// allocates only for a string with escapes.
func jsonHoldsCardNumber(v []byte) bool {
	w := jsonWalker{data: v}
	for w.pos < len(v) {
		switch c := v[w.pos]; {
		case c == '"':
			start := w.pos
			w.skipString()
			lit := v[start:w.pos]
			if bytes.IndexByte(lit, '\\') < 0 {
				if card.ContainsNumber(lit) {
					return true
				}
				continue
			}
			s, ok := jsonString(lit) // ok: v is valid JSON
			if card.ContainsNumber(s) || (!ok && card.ContainsNumber(lit)) {
				return true
			}
		case c == '-' || (c >= '0' && c <= '9'):
			start := w.pos
			for w.pos < len(v) && strings.IndexByte("+-.eE0123456789", v[w.pos]) >= 0 {
				w.pos++
			}
			lit := v[start:w.pos]
			var digits [maxIntegerDigits]byte
			if card.ContainsNumber(lit) || card.ContainsNumber(integerDigits(lit, &digits)) {
				return true
			}
		default: // structure, space, true, false, null
			w.pos++
		}
	}
	return false
}

// maxIntegerDigits is the most digits integerDigits writes out: a card
// number has at most 19.
const maxIntegerDigits = 19

// integerDigits writes to buf and returns the decimal digits of the value
// of lit, a valid JSON number, when that value is an integer of 1 to 19
// digits (its sign left out): 4.242424242424242e15, 4242424242424242.0 and
// 0.4242424242424242e16 all give 4242424242424242. For any other number (a
// fraction, zero, an integer of 20 digits or more) it returns nil. It
// works on the digits as written, so no precision is lost (float64 holds
// 15 to 17 significant digits), and an absurd exponent (1e999999999) costs
// no more than reading it.
func integerDigits(lit []byte, buf *[maxIntegerDigits]byte) []byte {
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	intStart := i
	for i < len(lit) && isDigit(lit[i]) {
		i++
	}
	intPart := lit[intStart:i]
	var fracPart []byte
	if i < len(lit) && lit[i] == '.' {
		i++
		fracStart := i
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
		fracPart = lit[fracStart:i]
	}
	exp := 0
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := i < len(lit) && lit[i] == '-'
		if i < len(lit) && (lit[i] == '-' || lit[i] == '+') {
			i++
		}
		for ; i < len(lit) && isDigit(lit[i]); i++ {
			if exp <= len(lit)+maxIntegerDigits { // beyond, the answer is nil either way
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	// The value is the mantissa's digits (intPart then fracPart) times
	// 10^(exp-len(fracPart)). Its significant digits run from the first
	// non-zero digit to the last; the zeros after them move the exponent.
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return fracPart[k-len(intPart)]
	}
	n := len(intPart) + len(fracPart)
	first, last := 0, n-1
	for first < n && digit(first) == '0' {
		first++
	}
	if first == n {
		return nil // zero
	}
	for digit(last) == '0' {
		last--
	}
	zeros := exp - len(fracPart) + (n - 1 - last)
	if zeros < 0 || last-first+1+zeros > maxIntegerDigits {
		return nil // a fraction, or too many digits for a card number
	}
	out := buf[:0]
	for k := first; k <= last; k++ {
		out = append(out, digit(k))
	}
	for range zeros {
		out = append(out, '0')
	}
	return out
}

// parseRefund decodes and validates a POST /v1/refunds body with the API's
// own rules (strict decoding, amount syntax and decimals for the currency,
// reason length). It returns the use case's input and the request's
// upper-cased currency, or an INVALID_REQUEST *paygate.Error naming the
// field to blame.
func parseRefund(body []byte) (payment.RefundInput, string, *paygate.Error) {
	var rr refundRequest
	if e := decodeJSON(body, &rr); e != nil {
		return payment.RefundInput{}, "", e
	}
	return rr.validate()
}
