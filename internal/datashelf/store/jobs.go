package store

import (
	"fmt"
	"time"
)

// Bounds of the job-browsing methods (FailedJobs, Throughput).
const (
	// MaxFailedJobs bounds FailedJobs' limit.
	MaxFailedJobs = 500
	// MaxThroughputBuckets bounds the buckets Throughput returns.
	MaxThroughputBuckets = 1000
)

// ThroughputBucket is the number of jobs that finished (completed_at) in
// [Start, Start+bucket).
type ThroughputBucket struct {
	Start     time.Time `json:"start"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

// ThroughputBuckets validates a Throughput request and returns the empty
// buckets from since to now, oldest first; the backends fill them.
func ThroughputBuckets(since, now time.Time, bucket time.Duration) ([]ThroughputBucket, error) {
	if bucket <= 0 || !since.Before(now) {
		return nil, fmt.Errorf("%w: throughput needs a positive bucket and a start in the past", ErrInvalid)
	}
	n := int((now.Sub(since) + bucket - 1) / bucket)
	if n > MaxThroughputBuckets {
		return nil, fmt.Errorf("%w: throughput of %d buckets (at most %d)", ErrInvalid, n, MaxThroughputBuckets)
	}
	out := make([]ThroughputBucket, n)
	for i := range out {
		out[i].Start = since.Add(time.Duration(i) * bucket).UTC()
	}
	return out, nil
}

// ThroughputRows is a backend's result of (bucket index, status, count)
// rows, as both backends' Throughput queries return them.
type ThroughputRows interface {
	Rows
	Scan(dest ...any) error
}

// FillThroughput adds each row of rows to its bucket of out (ignoring an
// index out of range: a job finished after now) and returns out; errors
// go through mapErr, the backend's error mapping. The caller closes rows.
func FillThroughput(out []ThroughputBucket, rows ThroughputRows, mapErr func(error) error) ([]ThroughputBucket, error) {
	for rows.Next() {
		var i int64
		var status string
		var count int
		if err := rows.Scan(&i, &status, &count); err != nil {
			return nil, mapErr(err)
		}
		if i < 0 || i >= int64(len(out)) {
			continue
		}
		switch JobStatus(status) {
		case StatusCompleted:
			out[i].Completed += count
		case StatusFailed:
			out[i].Failed += count
		}
	}
	return out, mapErr(rows.Err())
}

// ValidateIDs checks every id of ids (see ValidateID).
func ValidateIDs(ids []string) error {
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return err
		}
	}
	return nil
}
