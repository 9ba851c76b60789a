//go:build !race

package typescript

const raceEnabled = false
