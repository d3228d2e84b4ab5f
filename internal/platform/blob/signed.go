package blob

// Signer issues and verifies expiring, HMAC-signed URLs through which
// clients PUT objects into a Store without other credentials.
type Signer struct{}
