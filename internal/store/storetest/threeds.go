package storetest

// threeDSCases covers the store methods of its feature; filled in with the feature.
func threeDSCases() []testCase {
	return nil
}
