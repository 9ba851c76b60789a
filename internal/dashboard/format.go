package dashboard

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
)

// dataFuncs are the template functions of the data pages (Overview,
// Payments, Customers): money per currency, times in the viewer's zone,
// statuses as badges. Each returns escaped HTML or plain text.
func dataFuncs() template.FuncMap {
	return template.FuncMap{
		"fmtMoney":      moneyHTML,
		"fmtAmount":     submittedHTML,
		"fmtTime":       timeHTML,
		"fmtTimePtr":    timePtrHTML,
		"fmtDate":       dateHTML,
		"statusBadge":   badgeHTML,
		"cardExpiry":    cardExpiry,
		"cardBrand":     cardBrand,
		"percent":       percent,
		"paymentMarker": paymentMarker,
	}
}

// paymentMarker returns badges for what the status alone does not say: a
// captured payment refunded in full or in part, or captured for less than
// its amount. "" when none applies.
func paymentMarker(p paygate.Payment) template.HTML {
	if p.Status != paygate.PaymentCaptured {
		return ""
	}
	var out string
	switch {
	case p.AmountRefunded > 0 && p.AmountRefunded >= p.AmountCaptured:
		out += ` <span class="badge badge-refunded marker">refunded</span>`
	case p.AmountRefunded > 0:
		out += ` <span class="badge badge-partial marker">partly refunded</span>`
	}
	if p.AmountCaptured < p.Amount.Amount {
		out += ` <span class="badge badge-partial marker">partly captured</span>`
	}
	return template.HTML(out)
}

// currencySymbols caches the English symbol of each currency code ("€" for
// EUR, "$" for USD, "KWD" for KWD): the x/text lookup is not free and a
// payments page shows many amounts.
var currencySymbols sync.Map // string → string

// symbol returns the currency's symbol in English, or the code itself when
// the currency has none (or is unknown).
func symbol(code string) string {
	if s, ok := currencySymbols.Load(code); ok {
		return s.(string)
	}
	s := code
	if u, err := currency.ParseISO(code); err == nil {
		s = message.NewPrinter(language.English).Sprint(currency.Symbol(u))
	}
	currencySymbols.Store(code, s)
	return s
}

// currencyDigits is the currency's exponent (ISO 4217 minor unit digits);
// two for an unknown code.
func currencyDigits(code string) int {
	if digits, ok := money.Digits(code); ok {
		return digits
	}
	return 2
}

// formatMinor writes minor units of a currency with all of its decimals
// and thousands separators, after its symbol: 1050 EUR is "€10.50", 100 JPY
// "¥100", 1230 KWD "KWD 1.230" (a symbol that is only the code is followed
// by a no-break space). An unknown currency is written with two decimals.
func formatMinor(minor int64, code string) string {
	neg, whole, frac := splitMinor(minor, code)
	num := groupThousands(whole)
	if frac != "" {
		num += "." + frac
	}
	return withSymbol(num, code, neg)
}

// splitMinor splits minor units of a currency into the sign, the whole
// units and every decimal of the currency ("" for none): 1230 KWD is
// (false, "1", "230"), -1050 EUR (true, "10", "50"). An unknown currency
// has two decimals. The magnitude is worked out in uint64, so that of
// math.MinInt64 fits.
func splitMinor(minor int64, code string) (neg bool, whole, frac string) {
	digits := currencyDigits(code)
	neg = minor < 0
	mag := uint64(minor)
	if neg {
		mag = -mag
	}
	unit := uint64(1)
	for range digits {
		unit *= 10
	}
	whole = strconv.FormatUint(mag/unit, 10)
	if digits > 0 {
		f := strconv.FormatUint(mag%unit, 10)
		frac = strings.Repeat("0", digits-len(f)) + f
	}
	return neg, whole, frac
}

// formatSubmitted writes an amount the merchant submitted ("10.5") as
// formatMinor writes its value ("€10.50"); text that does not parse as an
// amount of the currency is shown as it is, after the symbol.
func formatSubmitted(text, code string) string {
	// One formatter everywhere: a submitted amount is shown with all the
	// currency's decimals, as computed ones are ("10" KWD is "KWD 10.000"
	// in every list, not "KWD 10" in one and "KWD 10.000" in another).
	if m, err := money.Parse(text, code); err == nil {
		return formatMinor(m.Amount, code)
	}
	neg := strings.HasPrefix(text, "-")
	num := strings.TrimPrefix(text, "-")
	// Thousands separators change nothing of the value: "1200" is shown
	// "1,200", "10.5" stays "10.5".
	whole, frac, hasFrac := strings.Cut(num, ".")
	if whole != "" && strings.Trim(whole, "0123456789") == "" {
		num = groupThousands(whole)
		if hasFrac {
			num += "." + frac
		}
	}
	return withSymbol(num, code, neg)
}

func withSymbol(num, code string, neg bool) string {
	sym := symbol(code)
	sign := ""
	if neg {
		sign = "-"
	}
	if sym == code {
		return sign + code + "\u00a0" + num
	}
	return sign + sym + num
}

// groupThousands puts a comma between each group of three digits.
func groupThousands(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head > 0 {
		b.WriteString(digits[:head])
	}
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// moneyHTML is formatMinor in a span whose title names the ISO code, so
// that "$" is never taken for another dollar.
func moneyHTML(minor int64, code string) template.HTML {
	return amountSpan(formatMinor(minor, code), code)
}

// submittedHTML is formatSubmitted in the same span as moneyHTML.
func submittedHTML(text, code string) template.HTML {
	return amountSpan(formatSubmitted(text, code), code)
}

func amountSpan(shown, code string) template.HTML {
	return template.HTML(`<span class="money" title="` + template.HTMLEscapeString(code) + `">` +
		template.HTMLEscapeString(shown) + `</span>`)
}

// timeLayout is how the dashboard writes a moment, to the second: "22 Nov
// 2026, 14:03:07 CET".
const timeLayout = "2 Jan 2006, 15:04:05 MST"

// formatTime writes t in loc (UTC when loc is nil).
func formatTime(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(timeLayout)
}

// timeHTML is a <time> element: the moment in the viewer's zone, with the
// exact UTC instant as its datetime and the seconds in its title.
func timeHTML(loc *time.Location, t time.Time) template.HTML {
	if t.IsZero() {
		return template.HTML(`<span class="none">–</span>`)
	}
	if loc == nil {
		loc = time.UTC
	}
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339Nano) + `" title="` +
		template.HTMLEscapeString(t.In(loc).Format("2006-01-02 15:04:05 MST")) + `">` +
		template.HTMLEscapeString(formatTime(t, loc)) + `</time>`)
}

// timePtrHTML is timeHTML for an optional moment; nil is a dash.
func timePtrHTML(loc *time.Location, t *time.Time) template.HTML {
	if t == nil {
		return timeHTML(loc, time.Time{})
	}
	return timeHTML(loc, *t)
}

// dateHTML is a <time> element for a date, given as midnight UTC of it (the
// form of the overview's days, which are days of the viewer's zone).
func dateHTML(day time.Time) template.HTML {
	d := day.UTC()
	return template.HTML(`<time datetime="` + d.Format(time.DateOnly) + `">` + d.Format("2 Jan") + `</time>`)
}

// badgeHTML shows a status (of a payment, refund or delivery) as a badge
// whose class names the status, so each gets its colour from the style
// sheet and its word from the text (colour is never the only cue).
func badgeHTML(status any) template.HTML {
	s := fmt.Sprint(status)
	return template.HTML(`<span class="badge badge-` + badgeClass(s) + `">` +
		template.HTMLEscapeString(strings.ReplaceAll(s, "_", " ")) + `</span>`)
}

// badgeClass keeps a status to the characters a class name may use.
func badgeClass(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// brandNames are the card brands as people write them.
var brandNames = map[string]string{
	"visa": "Visa", "mastercard": "Mastercard", "amex": "American Express", "discover": "Discover",
	"jcb": "JCB", "diners": "Diners Club", "unionpay": "UnionPay",
}

// cardBrand names a card brand for people ("visa" is "Visa"); an unknown
// brand is "Card".
func cardBrand(brand string) string {
	if n, ok := brandNames[brand]; ok {
		return n
	}
	return "Card"
}

// cardExpiry writes a card's expiry as MM/YY; unknown parts are dashes.
func cardExpiry(month, year int) string {
	if month < 1 || month > 12 || year <= 0 {
		return "–"
	}
	return fmt.Sprintf("%02d/%02d", month, year%100)
}

// percent writes part/whole as a percentage with one decimal ("97.5%"),
// rounded half up, or a dash when whole is 0. Integer arithmetic keeps
// large counts exact.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "–"
	}
	permille := (part*2000 + whole) / (2 * whole)
	return strconv.FormatInt(permille/10, 10) + "." + strconv.FormatInt(permille%10, 10) + "%"
}
