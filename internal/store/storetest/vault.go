package storetest

// vaultCases covers the store methods of stored cards; filled in with the
// feature.
func vaultCases() []testCase {
	return nil
}
