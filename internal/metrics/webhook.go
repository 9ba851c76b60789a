package metrics

// Results of a webhook delivery attempt, the values of the result label.
var deliveryResults = []string{"succeeded", "retry", "failed", "disabled"}

// Delivered counts one webhook delivery attempt by its result, as the
// dispatcher logs it: succeeded, retry, failed, or "endpoint disabled"
// (counted as disabled). Any other result counts as "other".
func (m *Metrics) Delivered(result string) {
	if m == nil {
		return
	}
	switch result {
	case "succeeded", "retry", "failed":
	case "endpoint disabled", "disabled":
		result = "disabled"
	default:
		result = otherLabel
	}
	m.deliveries.WithLabelValues(result).Inc()
}
