package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
)

// afterQuery returns a client option that calls f once, after the first
// Query for AVAILABILITY checks answered while armed is set, before the
// caller reads it.
func afterQuery(armed *atomic.Bool, f func()) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("afterQuery",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if q, ok := in.Parameters.(*dynamodb.QueryInput); ok && queriesType(q, probe.TypeAvailability) && armed.CompareAndSwap(true, false) {
						f()
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

func queriesType(q *dynamodb.QueryInput, typ string) bool {
	for _, v := range q.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == typ {
			return true
		}
	}
	return false
}

// TestRefreshKeepsChecksScheduledDuringIt: a check created (and
// scheduled) while a refresh reads the ACTIVE set, after that read
// answered, runs at its due time. The refresh must not take it for a
// deleted check because its read did not see it (nor would a read of an
// eventually consistent index on DynamoDB, for a while after the write):
// it would wait for the next refresh and run up to Options.Refresh late.
func TestRefreshKeepsChecksScheduledDuringIt(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	var (
		armed atomic.Bool
		s     *scheduler.Scheduler
		made  store.Check
	)
	st := store.New(ddb.NewClient(e.db, afterQuery(&armed, func() {
		made = e.check(t, tg.URL, time.Minute, t0.Add(2*time.Second), nil)
		s.Schedule(made.ID, made.NextRunAt)
	})), e.names, &store.Options{Now: e.clock.now})
	var log runLog
	s = scheduler.New(st, e.prb, nil, scheduler.Options{Owner: "a", Now: e.clock.now, Logger: e.log, RunTimeout: 5 * time.Second,
		RecordWait: -1, OnRun: log.record})
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if made.ID == "" {
		t.Fatal("the refresh made no Query: the test's hook did not create the check")
	}
	for now := t0; !now.After(t0.Add(3 * time.Second)); now = now.Add(250 * time.Millisecond) {
		e.clock.set(now)
		s.RunDue(ctx, now)
	}
	if got := log.runs[made.ID]; len(got) != 1 || !got[0].Equal(made.NextRunAt) {
		t.Fatalf("check created during a refresh ran at %v; want once, at its due time %v", got, made.NextRunAt)
	}
}
