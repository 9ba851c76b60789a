// Package connectors lists the connectors paygate is built with. Adding a
// connector is one line in All (README, "Adding a connector"); cmd/paygate
// registers the list with provider.Register.
package connectors

import (
	"github.com/paygate/paygate/internal/provider/adyen"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/provider/stripe"
)

// All lists every connector; the order is that of kinds in messages.
var All = []connector.Connector{
	sandbox.Connector,
	stripe.Connector,
	adyen.Connector,
}
