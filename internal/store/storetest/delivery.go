package storetest

// deliveryCases covers the store methods of its feature; filled in with the feature.
func deliveryCases() []testCase {
	return nil
}
