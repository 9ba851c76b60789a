package payment

// RecoveryBatchForTest exposes the batch size to the external tests.
const RecoveryBatchForTest = recoveryBatch

// StoredAnswer exposes the answer a use case stored for its result.
func StoredAnswer(r Result) Answer { return r.answer }
