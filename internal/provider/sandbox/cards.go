package sandbox

import "github.com/paygate/paygate/internal/paygate"

// The test cards of decisions.md section 12. Any other number that passed
// validation is captured.
const (
	CardVisa       = "4242424242424242" // captured
	CardMastercard = "5555555555554444" // captured
	CardAmex       = "378282246310005"  // captured

	CardAuthorize = "4000000000000077" // authorized, to be captured or voided later

	Card3DS                = "4000000000003220" // 3-D Secure challenge, then captured or failed as the customer chooses (threeds.go)
	Card3DSCaptureDeclined = "4000008400001629" // 3-D Secure challenge, then the capture is declined (threeds.go)

	CardDeclined          = "4000000000000002" // declined, generic_decline
	CardInsufficientFunds = "4000000000009995" // declined, insufficient_funds
	CardExpired           = "4000000000000069" // declined, expired_card
	CardIncorrectCVC      = "4000000000000127" // declined, incorrect_cvc

	CardProviderError = "4000000000000119" // the provider errors: PROVIDER_ERROR
	CardFailover      = "4000000000000259" // first provider of the route unavailable; the next captures
	CardTimeout       = "4000000000000705" // times out after 2 s (outcome unknown); an inquiry says captured 3 s later
	CardRefundFails   = "4000000000005126" // captured; every refund of it fails
)

// decline is the answer to a declining test card. Messages are shown to
// merchants and, through them, to cardholders: they never name the card.
type decline struct {
	code    string
	message string
}

var declines = map[string]decline{
	CardDeclined:          {paygate.DeclineGeneric, "Your card was declined."},
	CardInsufficientFunds: {paygate.DeclineInsufficientFunds, "Your card has insufficient funds."},
	CardExpired:           {paygate.DeclineExpiredCard, "Your card has expired."},
	CardIncorrectCVC:      {paygate.DeclineIncorrectCVC, "Your card's security code is incorrect."},
}

// Messages of the simulated provider failures. They are stored as the
// payment's errorMessage, so they speak to the merchant.
const (
	msgProviderError   = "The payment provider could not process the payment."
	msgUnavailable     = "The payment provider is temporarily unavailable."
	msgTimeout         = "The payment provider did not answer in time; the outcome is not known yet."
	msgOutage          = "The payment provider is temporarily unavailable (simulated outage)."
	msgLedgerDown      = "The payment provider did not confirm the payment; the outcome is not known yet."
	msgRecordsDown     = "The payment provider's records cannot be read right now."
	msgCancelled       = "The request was cancelled before it reached the payment provider."
	msgLiveRefused     = "The sandbox provider does not process live payments."
	msgUnknownRef      = "The payment provider does not know this payment."
	msgRefundRefused   = "The card issuer refused the refund."
	msgCurrencyMissing = "The payment provider does not serve this currency."
)
