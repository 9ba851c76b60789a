package web

import "testing"

func TestReturnOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                  "",
		"https://shop.example/return?x=1":   "https://shop.example",
		"HTTPS://Shop.Example:8443/r":       "https://Shop.Example:8443",
		"http://127.0.0.1:9000/r":           "http://127.0.0.1:9000",
		"https://a;script-src%20*@x.test/r": "https://x.test",
		"https://x.test;frame-ancestors/r":  "",
		"https://[::1]:8443/r":              "", // not expressible as a CSP host source
		"::not a url":                       "",
	} {
		if got := ReturnOrigin(in); got != want {
			t.Errorf("ReturnOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}
