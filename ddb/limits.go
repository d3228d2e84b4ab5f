package ddb

// DescribeLimits.

// DescribeLimitsInput is the (empty) request of DescribeLimits.
type DescribeLimitsInput struct{}

// DescribeLimitsOutput is the response of DescribeLimits: the default
// per-account and per-table provisioned capacity quotas of DynamoDB.
type DescribeLimitsOutput struct {
	AccountMaxReadCapacityUnits  int64 `json:"AccountMaxReadCapacityUnits"`
	AccountMaxWriteCapacityUnits int64 `json:"AccountMaxWriteCapacityUnits"`
	TableMaxReadCapacityUnits    int64 `json:"TableMaxReadCapacityUnits"`
	TableMaxWriteCapacityUnits   int64 `json:"TableMaxWriteCapacityUnits"`
}

// DescribeLimits returns the capacity quotas DynamoDB applies by default
// (the store itself enforces none).
func (s *Store) DescribeLimits(*DescribeLimitsInput) (*DescribeLimitsOutput, error) {
	return &DescribeLimitsOutput{
		AccountMaxReadCapacityUnits:  80000,
		AccountMaxWriteCapacityUnits: 80000,
		TableMaxReadCapacityUnits:    40000,
		TableMaxWriteCapacityUnits:   40000,
	}, nil
}
