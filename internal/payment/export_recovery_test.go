package payment

// RecoveryBatchForTest exposes the batch size to the external tests.
const RecoveryBatchForTest = recoveryBatch
