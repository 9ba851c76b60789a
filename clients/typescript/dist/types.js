// The requests and answers of /v1. Amounts are decimal strings ("10.50",
// "100" for JPY), as the API takes and shows them: at most two decimals, no
// more than the currency has; the client never turns them into numbers.
// Times are ISO 8601 strings in UTC with milliseconds.
export {};
