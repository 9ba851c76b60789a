//go:build race

package dashboard

// exportTestRows is how many payments the export test streams. Under the
// race detector the transpiled SQLite runs about ten times slower, and
// 100,000 inserts took over three minutes of a shared machine; 10,000 still
// cross twenty pages of the export. Run the test without -race for the
// 100,000-row figure.
const exportTestRows = 10_000
