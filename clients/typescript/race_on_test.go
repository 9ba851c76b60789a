//go:build race

package typescript

// raceEnabled builds the gateway with the race detector when go test runs
// with it, as e2e does: the two builds share the cache.
const raceEnabled = true
