package provider

import (
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connectors"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// The tests run with every connector registered, as serve does.
func init() { Register(connectors.All...) }

// Names the tests use.
const (
	KindSandbox   = sandbox.Kind
	SandboxEU     = sandbox.EU
	SandboxUS     = sandbox.US
	SandboxAPAC   = sandbox.APAC
	SandboxGlobal = sandbox.Global
)

// Default is the table serve builds without a configuration file.
func Default() *Table {
	t, err := NewTable(map[paygate.Mode]Routes{paygate.ModeTest: sandbox.Routes(), paygate.ModeLive: {}})
	if err != nil {
		panic(err)
	}
	return t
}
