package provider

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/paygate/paygate/internal/provider/connector"
)

// The registered connectors, in the order of registration (the order of
// kinds in messages).
var registry struct {
	sync.RWMutex
	list []connector.Connector
}

// Register makes connectors' kinds known to the configuration file and to
// Build. cmd/paygate registers every connector in one place
// (cmd/paygate/connectors.go); a kind registered twice is a wiring mistake
// and panics.
func Register(cs ...connector.Connector) {
	registry.Lock()
	defer registry.Unlock()
	for _, c := range cs {
		for _, have := range registry.list {
			if have.Kind == c.Kind {
				panic(fmt.Sprintf("provider: kind %q is registered twice", c.Kind))
			}
		}
		registry.list = append(registry.list, c)
	}
}

// Connectors returns the registered connectors, in the order of
// registration.
func Connectors() []connector.Connector {
	registry.RLock()
	defer registry.RUnlock()
	return append([]connector.Connector(nil), registry.list...)
}

// connectorOf returns the connector of a kind.
func connectorOf(kind string) (connector.Connector, bool) {
	for _, c := range Connectors() {
		if c.Kind == kind {
			return c, true
		}
	}
	return connector.Connector{}, false
}

// kindsKnown lists the registered kinds, for messages.
func kindsKnown() string {
	var kinds []string
	for _, c := range Connectors() {
		kinds = append(kinds, c.Kind)
	}
	return strings.Join(kinds, ", ")
}

// settingKeys lists the top-level keys of a connector's settings.
func settingKeys(c connector.Connector) []string {
	if c.Settings == nil {
		return nil
	}
	return sortedKeys(fields(c.Settings(), map[string]reflect.Value{}))
}

// kindsTaking lists the kinds whose settings have the key.
func kindsTaking(key string) []string {
	var kinds []string
	for _, c := range Connectors() {
		for _, k := range settingKeys(c) {
			if k == key {
				kinds = append(kinds, c.Kind)
			}
		}
	}
	return kinds
}

// Endpoints returns the HTTP endpoints of every registered connector,
// keyed by http.ServeMux pattern, for httpapi.Config.Endpoints. Two
// connectors claiming one pattern is a wiring mistake and panics.
func Endpoints(s connector.Services) map[string]http.Handler {
	out := map[string]http.Handler{}
	for _, c := range Connectors() {
		if c.Endpoints == nil {
			continue
		}
		for pattern, h := range c.Endpoints(s) {
			if _, dup := out[pattern]; dup {
				panic(fmt.Sprintf("provider: endpoint %q is served by two connectors", pattern))
			}
			out[pattern] = h
		}
	}
	return out
}
