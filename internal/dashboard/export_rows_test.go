//go:build !race

package dashboard

// exportTestRows is how many payments the export test streams.
const exportTestRows = 100_000
