package connector

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// The value types of settings. Their errors leave out the key's name: the
// parser puts it in front ("timeout " + "\"10\" is not a duration ...").

// Duration is a Go duration written as a string ("150ms", "10s").
type Duration time.Duration

// UnmarshalYAML reads a duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return errors.New("must be a string")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 500ms or 10s", n.Value)
	}
	*d = Duration(v)
	return nil
}

// Within reads a duration as UnmarshalYAML does and refuses one outside
// lo to hi with the error "must be " + want, so that a setting's range is
// checked where its key is read.
func (d *Duration) Within(n *yaml.Node, lo, hi time.Duration, want string) error {
	if err := d.UnmarshalYAML(n); err != nil {
		return err
	}
	if v := time.Duration(*d); v < lo || v > hi {
		return errors.New("must be " + want)
	}
	return nil
}

// Rate is a number from 0 to 1.
type Rate float64

// UnmarshalYAML reads a rate.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
		return errors.New("must be a number from 0 to 1")
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return errors.New("must be a number from 0 to 1")
	}
	*r = Rate(f)
	return nil
}

// CheckBaseURL is the Check of a connector's base_url setting: an https
// URL, or http on loopback (a mock); nil (not given: the provider's own)
// passes, "" does not.
func CheckBaseURL(id string, baseURL *string) error {
	if baseURL == nil {
		return nil
	}
	u, err := url.Parse(*baseURL)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
		return &KeyError{Key: "base_url", Msg: fmt.Sprintf("provider %q: base_url %q must be an https URL (http only on loopback, for mocks)", id, *baseURL)}
	}
	return nil
}

// loopbackHost reports whether a host is the local machine.
func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
