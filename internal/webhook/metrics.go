package webhook

// Metrics receives the dispatcher's attempts, for the operator's metrics
// (internal/metrics implements it).
type Metrics interface {
	// Delivered reports one attempt by its result, as the attempt's log
	// line names it: succeeded, retry, failed or "endpoint disabled".
	Delivered(result string)
}

// noMetrics records nothing: a dispatcher without metrics.
type noMetrics struct{}

func (noMetrics) Delivered(string) {}
