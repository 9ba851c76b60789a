package main

import (
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/connectors"
)

// Every connector of connectors.All is a kind of provider the
// configuration file may name, and serves its endpoints.
func init() { provider.Register(connectors.All...) }
