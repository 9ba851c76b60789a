//go:build race

package e2e

// raceEnabled makes the harness build the server with the race detector
// when the tests themselves run with it, so races in the server fail CI.
const raceEnabled = true
