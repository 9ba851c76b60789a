//go:build race

package client

// raceEnabled builds the gateway the tests start with the race detector
// when the tests run with it, as e2e does: the two builds share the cache.
const raceEnabled = true
