package sandbox

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/providertest"
)

// TestConformance runs the shared provider conformance suite against a
// sandbox heading the EUR route (so card 4000000000000259 is unavailable).
func TestConformance(t *testing.T) {
	t.Parallel()
	providertest.Exercise(t, providertest.Harness{
		New: func(*testing.T) paygate.Provider { return New("sandbox-conformance", []string{"EUR"}, FirstOf("EUR")) },
		Card: func(o providertest.Outcome, code string) string {
			switch o {
			case providertest.Captured:
				return CardVisa
			case providertest.Authorized:
				return CardAuthorize
			case providertest.Declined:
				for n, d := range declines {
					if d.code == code {
						return n
					}
				}
			case providertest.Failed:
				return CardProviderError
			case providertest.Unavailable:
				return CardFailover
			case providertest.Timeout:
				return CardTimeout
			case providertest.ThreeDS:
				return Card3DS
			}
			return ""
		},
		ThreeDSResponse: func(_ *testing.T, req paygate.ChargeRequest, _ paygate.ChargeResult, authenticate bool) map[string]string {
			status := "N"
			if authenticate {
				status = "Y"
			}
			return map[string]string{
				"cres": encodeMessage(cres{
					MessageType: "CRes", MessageVersion: messageVersion, ThreeDSServerTransID: req.PaymentID,
					ACSTransID: acsTransID(req.PaymentID), TransStatus: status,
				}),
				"threeDSSessionData": sessionData(req.PaymentID),
			}
		},
		InquiryWait: TimeoutAfter + InquiryDelay + 2*time.Second,
	})
}
