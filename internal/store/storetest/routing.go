package storetest

// routingCases covers the store methods of its feature; filled in with the feature.
func routingCases() []testCase {
	return nil
}
