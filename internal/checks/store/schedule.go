package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/backoff"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Due is what the scheduler keeps of a check.
type Due struct {
	ID        string
	UserID    string
	NextRunAt time.Time
}

// ActiveChecks lists the ACTIVE checks of a type through the type-status
// index (it projects PK, userid and createdAt).
func (s *Store) ActiveChecks(ctx context.Context, checkType string) ([]Due, error) {
	var out []Due
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName: aws.String(s.names.Checks), IndexName: aws.String(tables.TypeStatusIndex),
		KeyConditionExpression:    aws.String("checkType = :t AND #s = :a"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]av{":t": ddbitem.S(checkType), ":a": ddbitem.S(CheckActive)},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("checks: active checks: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, Due{ID: ddbitem.String(it, "PK"), UserID: ddbitem.String(it, "userid")})
		}
	}
	return out, nil
}

// NextRuns reads nextRunAt of checks (BatchGetItem, 100 at a time),
// filling in ds; checks that vanished are dropped.
func (s *Store) NextRuns(ctx context.Context, ds []Due) ([]Due, error) {
	byID := make(map[string]*Due, len(ds))
	for i := range ds {
		byID[ds[i].ID] = &ds[i]
	}
	found := map[string]bool{}
	for start := 0; start < len(ds); start += 100 {
		keys := make([]map[string]av, 0, 100)
		for _, d := range ds[start:min(start+100, len(ds))] {
			keys = append(keys, key(d.ID, skCheck))
		}
		got, err := s.batchGet(ctx, types.KeysAndAttributes{Keys: keys, ProjectionExpression: aws.String("PK, nextRunAt, userid")})
		if err != nil {
			return nil, fmt.Errorf("checks: next runs: %w", err)
		}
		for id, it := range got {
			if d := byID[id]; d != nil {
				d.NextRunAt = fromMs(ddbitem.Int(it, "nextRunAt"))
				d.UserID = ddbitem.String(it, "userid")
				found[d.ID] = true
			}
		}
	}
	out := ds[:0]
	for _, d := range ds {
		if found[d.ID] {
			out = append(out, *byID[d.ID])
		}
	}
	return out, nil
}

// Claim takes the run of a check that the caller believes due at due (its
// nextRunAt as last read) and that is due at or before now: one
// conditional update, with no read before it, that moves nextRunAt to the
// next period and sets a lease, so that of several schedulers exactly one
// runs each period. The condition also refuses a run another owner still
// leases (a run longer than the period). The next period is nextRunAt +
// delayMs; when that is already past (after downtime), a second write
// moves it to now + delayMs, so a check runs once, not once per missed
// period. When the claim fails it returns the check as it stands (from the
// failed write) and ErrLost. It is ClaimAhead with no lookahead.
func (s *Store) Claim(ctx context.Context, id, owner string, due, now time.Time, lease time.Duration) (Check, error) {
	return s.ClaimAhead(ctx, id, owner, due, now, 0, lease, 0)
}

// ClaimAhead is Claim for a run due at most ahead after now: the claim is
// made now, the run is to start at due. The lease runs from the run's
// start, max(due, now), so a run claimed ahead holds its check for lease
// after its due time; the missed-period rule uses that start too. A check
// that still carries another owner's lease (its run in flight or its
// record late, or that owner dead) is not claimed ahead: only once due
// and the lease has ended, as Claim does, so a slow run keeps the whole
// period to record itself, as without lookahead. The owner's own lease
// is no exception: it means a run of the check claimed and not yet
// recorded (or a restart of the same owner), so the next period is only
// claimed once due. The caller that does
// not start the run must give the claim back (Unclaim), or the period is
// skipped.
//
// period is the check's delayMs as the caller last read it (0: unknown).
// A claim at least that late (a node behind its schedule) sets the next
// period from the run's start in its one write, on the condition that
// delayMs is still period, instead of a second write after the claim;
// when delayMs changed, the claim is made once more with the new one.
func (s *Store) ClaimAhead(ctx context.Context, id, owner string, due, now time.Time, ahead, lease, period time.Duration) (Check, error) {
	return s.claimAhead(ctx, id, owner, due, now, ahead, lease, period, true)
}

// claimAhead is ClaimAhead; retry allows the one claim again after a
// stale period.
func (s *Store) claimAhead(ctx context.Context, id, owner string, due, now time.Time, ahead, lease, period time.Duration, retry bool) (Check, error) {
	u, late := s.claimUpdate(ClaimRequest{ID: id, Due: due, Now: now, Ahead: ahead, Lease: lease, Period: period}, owner)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           u.TableName,
		Key:                                 u.Key,
		UpdateExpression:                    u.UpdateExpression,
		ConditionExpression:                 u.ConditionExpression,
		ExpressionAttributeNames:            u.ExpressionAttributeNames,
		ExpressionAttributeValues:           u.ExpressionAttributeValues,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return Check{}, fmt.Errorf("%w: check %s", ErrNotFound, id)
		}
		c := parseCheck(ccf.Item)
		if actual := time.Duration(c.DelayMs) * time.Millisecond; late && retry && actual != period {
			return s.claimAhead(ctx, id, owner, due, now, ahead, lease, actual, false)
		}
		return c, ErrLost
	}
	if err != nil {
		return Check{}, fmt.Errorf("checks: claim %s: %w", id, err)
	}
	return s.skipMissed(ctx, parseCheck(out.Attributes), owner, claimStart(due, now))
}

// claimStart is when a run due at due and claimed at now starts.
func claimStart(due, now time.Time) time.Time {
	if due.After(now) {
		return due
	}
	return now
}

// claimUpdate is the conditional update of claim r by owner (ClaimAhead)
// and whether it is a late claim, which sets the next period from the
// run's start on the condition that delayMs is still r.Period.
func (s *Store) claimUpdate(r ClaimRequest, owner string) (types.Update, bool) {
	start := claimStart(r.Due, r.Now)
	update := "SET nextRunAt = nextRunAt + delayMs, leaseOwner = :me, leaseUntil = :lease"
	cond := "#s = :active AND nextRunAt = :due AND nextRunAt <= :horizon AND " +
		"(attribute_not_exists(leaseUntil) OR ((leaseOwner = :me OR leaseUntil < :now) AND nextRunAt <= :now))"
	values := map[string]av{
		":me": ddbitem.S(owner), ":lease": ddbitem.N(ms(start.Add(r.Lease))), ":active": ddbitem.S(CheckActive),
		":due": ddbitem.N(ms(r.Due)), ":now": ddbitem.N(ms(r.Now)), ":horizon": ddbitem.N(ms(r.Now.Add(max(r.Ahead, 0)))),
	}
	late := r.Period > 0 && !r.Due.Add(r.Period).After(start)
	if late {
		update = "SET nextRunAt = :next, leaseOwner = :me, leaseUntil = :lease"
		cond += " AND delayMs = :period"
		values[":next"], values[":period"] = ddbitem.N(ms(start.Add(r.Period))), ddbitem.N(r.Period.Milliseconds())
	}
	return types.Update{
		TableName:                 aws.String(s.names.Checks),
		Key:                       key(r.ID, skCheck),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: values,
	}, late
}

// ClaimRequest is one claim of ClaimAll: ClaimAhead's arguments.
type ClaimRequest struct {
	ID                   string
	Due, Now             time.Time
	Ahead, Lease, Period time.Duration
}

// Claimed is the outcome of one claim of ClaimAll: ClaimAhead's results.
type Claimed struct {
	Check Check
	Err   error
}

// ClaimAll makes claims of distinct checks for owner, each as ClaimAhead
// makes one, in one transaction of their conditional updates followed by
// one consistent BatchGetItem that reads the claimed checks back (a
// transaction returns no items): one commit for many claims. When the
// transaction is cancelled because claims were refused (their checks held
// by another process, their due times stale, their periods changed),
// each refused claim is made again on its own by ClaimAhead, whose answer
// says why, and the others again together as one group; when it fails
// otherwise, each claim is made again on its own. A claim that the failed
// transaction made after all
// (a call cut off after the store committed it) is then refused, its
// period skipped, as a cut-off ClaimAhead's is. A check that two claims
// name is claimed once, by a ClaimAhead each. It returns one outcome per
// claim, in rs's order.
func (s *Store) ClaimAll(ctx context.Context, owner string, rs []ClaimRequest) []Claimed {
	out := make([]Claimed, len(rs))
	alone := func(i int) {
		r := rs[i]
		out[i].Check, out[i].Err = s.ClaimAhead(ctx, r.ID, owner, r.Due, r.Now, r.Ahead, r.Lease, r.Period)
	}
	seen := make(map[string]bool, len(rs))
	var group, again []int
	for i, r := range rs {
		if seen[r.ID] {
			again = append(again, i)
			continue
		}
		seen[r.ID] = true
		group = append(group, i)
	}
	s.claimGroup(ctx, owner, rs, group, out, alone)
	for _, i := range again {
		alone(i)
	}
	return out
}

// claimGroup makes the claims of rs at group, of distinct checks, as
// ClaimAll says, and sets their outcomes in out; alone makes one claim on
// its own.
func (s *Store) claimGroup(ctx context.Context, owner string, rs []ClaimRequest, group []int, out []Claimed, alone func(int)) {
	if len(group) <= 1 || len(group) > MaxTransactItems {
		for _, i := range group {
			alone(i)
		}
		return
	}
	items := make([]types.TransactWriteItem, len(group))
	for k, i := range group {
		u, _ := s.claimUpdate(rs[i], owner)
		items[k] = types.TransactWriteItem{Update: &u}
	}
	if _, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		var refused, rest []int
		if reasons := ddbitem.CancelReasons(err); len(reasons) == len(group) {
			for k, i := range group {
				if reasons[k] == "ConditionalCheckFailed" {
					refused = append(refused, i)
				} else {
					rest = append(rest, i)
				}
			}
		}
		if len(refused) == 0 {
			rest = nil
			refused = group
		}
		// Each round leaves out at least one claim, so this ends.
		s.claimGroup(ctx, owner, rs, rest, out, alone)
		for _, i := range refused {
			alone(i)
		}
		return
	}
	keys := make([]map[string]av, len(group))
	for k, i := range group {
		keys[k] = key(rs[i].ID, skCheck)
	}
	got, err := s.batchGet(ctx, types.KeysAndAttributes{Keys: keys, ConsistentRead: aws.Bool(true)})
	for _, i := range group {
		r := rs[i]
		it, ok := got[r.ID]
		switch {
		case err != nil:
			out[i].Err = fmt.Errorf("checks: claim %s: read back: %w", r.ID, err)
		case !ok:
			out[i].Err = fmt.Errorf("%w: check %s", ErrNotFound, r.ID)
		default:
			out[i].Check, out[i].Err = s.skipMissed(ctx, parseCheck(it), owner, claimStart(r.Due, r.Now))
		}
	}
}

// batchGet reads the CHECK items that ka names (at most 100 keys), by
// id. Unprocessed keys (throttling) are asked for again after a backoff,
// as DynamoDB recommends.
func (s *Store) batchGet(ctx context.Context, ka types.KeysAndAttributes) (map[string]map[string]av, error) {
	found := make(map[string]map[string]av, len(ka.Keys))
	req := map[string]types.KeysAndAttributes{s.names.Checks: ka}
	retry := backoff.Policy{Base: 20 * time.Millisecond, Max: time.Second, Jitter: 0.2}.Start()
	for attempt := 0; len(req) > 0; attempt++ {
		if attempt > 10 {
			return nil, errors.New("keys left unprocessed")
		}
		if attempt > 0 {
			if err := retry.Wait(ctx); err != nil {
				return nil, err
			}
		}
		out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, err
		}
		for _, it := range out.Responses[s.names.Checks] {
			found[ddbitem.String(it, "PK")] = it
		}
		req = out.UnprocessedKeys
	}
	return found, nil
}

// skipMissed moves the next run of check c, just claimed by owner for a
// run starting at start, to a period after start when the claim left it
// at or before start (missed periods: the check runs once, not once per
// period missed).
func (s *Store) skipMissed(ctx context.Context, c Check, owner string, start time.Time) (Check, error) {
	if c.NextRunAt.After(start) {
		return c, nil
	}
	next := start.Add(time.Duration(c.DelayMs) * time.Millisecond)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.names.Checks),
		Key:                       key(c.ID, skCheck),
		UpdateExpression:          aws.String("SET nextRunAt = :next"),
		ConditionExpression:       aws.String("leaseOwner = :me AND nextRunAt = :was"),
		ExpressionAttributeValues: map[string]av{":next": ddbitem.N(ms(next)), ":me": ddbitem.S(owner), ":was": ddbitem.N(ms(c.NextRunAt))},
	})
	if err != nil && !ddbitem.ConditionFailed(err) {
		return Check{}, fmt.Errorf("checks: claim %s: %w", c.ID, err)
	}
	c.NextRunAt = next
	return c, nil
}

// RenewRun extends owner's lease on check id's run in flight until
// until; ErrLost when another owner holds the check now (the run's record
// will be refused), ErrReleased when no one does: the run's record was
// written (a run waits for its record's group write, so it is still in
// flight when that commits), the run released, or the check deleted.
func (s *Store) RenewRun(ctx context.Context, id, owner string, until time.Time) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
		UpdateExpression:                    aws.String("SET leaseUntil = :until"),
		ConditionExpression:                 aws.String("leaseOwner = :me"),
		ExpressionAttributeValues:           map[string]av{":me": ddbitem.S(owner), ":until": ddbitem.N(ms(until))},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		if ddbitem.String(ccf.Item, "leaseOwner") == "" {
			return fmt.Errorf("%w: check %s", ErrReleased, id)
		}
		return fmt.Errorf("%w: check %s", ErrLost, id)
	}
	if err != nil {
		return fmt.Errorf("checks: renew the lease of %s: %w", id, err)
	}
	return nil
}

// Unclaim gives back a run claimed (ClaimAhead) but not started: when the
// check still stands as the claim left it (owner holds the lease,
// nextRunAt is next, the value the claim returned), nextRunAt goes back
// to due and the lease is removed, so that another process runs the
// period; the change is noted in the schedule change log, which other
// schedulers read at their next refresh. When the check changed since
// (its schedule was edited), only the lease is removed, as Release does.
func (s *Store) Unclaim(ctx context.Context, id, owner string, due, next time.Time) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
		UpdateExpression:          aws.String("SET nextRunAt = :due REMOVE leaseOwner, leaseUntil"),
		ConditionExpression:       aws.String("leaseOwner = :me AND nextRunAt = :next"),
		ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner), ":due": ddbitem.N(ms(due)), ":next": ddbitem.N(ms(next))},
	})
	if ddbitem.ConditionFailed(err) {
		return s.Release(ctx, id, owner)
	}
	if err != nil {
		return fmt.Errorf("checks: unclaim %s: %w", id, err)
	}
	return s.noteScheduleChange(ctx, id)
}

// Outcome is what a run leaves on its check.
type Outcome struct {
	Result     map[string]any
	At         time.Time
	AlertState string
	FailCount  int
	// Fail, when set, makes the check FAILED with this reason.
	Fail string
	// Retention keeps the run in the history for this long (0: not kept).
	Retention time.Duration
	// Alert, when set, is the alert the run raises: written to the outbox
	// with the record, claimed by the recording owner until AlertClaim.
	Alert      *PendingAlert
	AlertClaim time.Time
}

// Complete records a run: lastResult, lastExecutedAt, alertState and the
// failure state, conditioned on the caller still holding the lease (so an
// alert transition is recorded once), when o.Retention > 0 a history item
// and the run's count in its day's rollup (see Day), and the alert the run
// raises in the outbox: all in one transaction, so that an alert state
// is never recorded without its alert, nor an alert without its run.
func (s *Store) Complete(ctx context.Context, id, owner string, o Outcome) error {
	items, err := s.completeItems(id, owner, o)
	if err != nil {
		return err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: check %s", ErrLost, id)
	}
	if err != nil {
		return fmt.Errorf("checks: complete %s: %w", id, err)
	}
	return nil
}

// completeItems are the transaction items that record check id's run o
// (Complete); the first is the conditional update of the check.
func (s *Store) completeItems(id, owner string, o Outcome) ([]types.TransactWriteItem, error) {
	res, err := mapValue(o.Result)
	if err != nil {
		return nil, err
	}
	at := ddbitem.FormatTime(o.At)
	update := "SET lastResult = :r, lastExecutedAt = :at, alertState = :st, failCount = :fc REMOVE leaseOwner, leaseUntil"
	values := map[string]av{":r": res, ":at": ddbitem.S(at), ":st": ddbitem.S(o.AlertState), ":fc": ddbitem.N(int64(o.FailCount)), ":me": ddbitem.S(owner)}
	names := map[string]string(nil)
	if o.Fail != "" {
		update = "SET lastResult = :r, lastExecutedAt = :at, alertState = :st, failCount = :fc, #s = :failed, failureReason = :why, updatedAt = :at REMOVE leaseOwner, leaseUntil"
		values[":failed"], values[":why"] = ddbitem.S(CheckFailed), ddbitem.S(o.Fail)
		names = map[string]string{"#s": "status"}
	}
	items := make([]types.TransactWriteItem, 1, runItems)
	items[0] = types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("leaseOwner = :me"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
	if o.Retention > 0 {
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.names.Checks),
			Item: map[string]av{
				"PK": ddbitem.S(id), "SK": ddbitem.S(skResult + at), "result": res,
				tables.TTLAttribute: ddbitem.N(o.At.Add(o.Retention).Unix()),
			},
		}})
		items = append(items, s.dayUpdate(id, o))
	}
	if o.Alert != nil {
		items = append(items, s.alertPut(*o.Alert, owner, o.AlertClaim))
	}
	return items, nil
}

// runItems is the most transaction items one run's record takes: the
// check, its history item, its day's rollup and its alert.
const runItems = 4

// MaxTransactItems is how many items one transaction may write
// (DynamoDB's limit).
const MaxTransactItems = 100

// Record is one run to record: check ID's outcome.
type Record struct {
	ID      string
	Outcome Outcome
}

// CompleteAll records runs of checks held by owner, each as Complete
// does, in as few transactions as MaxTransactItems allows (two runs of
// one check never share one): one commit for many runs. Each transaction
// is all or nothing. When one is cancelled, its runs whose check
// refused the condition (the lease is lost) get ErrLost, and each of the
// others is recorded by Complete on its own, so that one lost lease or a
// conflicting write does not refuse the rest; after any other failure
// every run of the transaction is recorded by Complete on its own too.
// Each run is recorded at most once: Complete's condition on the lease
// refuses a run that the failed transaction did write after all (a call
// cut off after the store committed it), which then reports ErrLost as
// a Complete cut off the same way does. It returns one error per run,
// in rs's order, nil for a run recorded.
func (s *Store) CompleteAll(ctx context.Context, owner string, rs []Record) []error {
	errs := make([]error, len(rs))
	if len(rs) == 1 {
		errs[0] = s.Complete(ctx, rs[0].ID, owner, rs[0].Outcome)
		return errs
	}
	var (
		items []types.TransactWriteItem
		runs  []int // the index in rs of each run in items
		first []int // the index in items of each run's check update
		ids   = map[string]bool{}
	)
	flush := func() {
		if len(runs) > 0 {
			s.completeGroup(ctx, owner, rs, items, runs, first, errs)
		}
		items, runs, first = nil, nil, nil
		clear(ids)
	}
	for i, r := range rs {
		its, err := s.completeItems(r.ID, owner, r.Outcome)
		if err != nil {
			errs[i] = err
			continue
		}
		if ids[r.ID] || len(items)+len(its) > MaxTransactItems {
			flush()
		}
		ids[r.ID] = true
		runs, first = append(runs, i), append(first, len(items))
		items = append(items, its...)
	}
	flush()
	return errs
}

// completeGroup writes the runs of rs at runs, whose items are items
// (run k's check update at first[k]), in one transaction, falling back
// to one Complete per run as CompleteAll says, and sets their errs.
func (s *Store) completeGroup(ctx context.Context, owner string, rs []Record, items []types.TransactWriteItem, runs, first []int, errs []error) {
	if len(runs) == 1 {
		i := runs[0]
		errs[i] = s.Complete(ctx, rs[i].ID, owner, rs[i].Outcome)
		return
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return
	}
	reasons := ddbitem.CancelReasons(err)
	for k, i := range runs {
		if len(reasons) == len(items) && reasons[first[k]] == "ConditionalCheckFailed" {
			errs[i] = fmt.Errorf("%w: check %s", ErrLost, rs[i].ID)
			continue
		}
		errs[i] = s.Complete(ctx, rs[i].ID, owner, rs[i].Outcome)
	}
}

// Run is one entry of a check's history.
type Run struct {
	At     string         `json:"at"`
	Result map[string]any `json:"result"`
}

// Results returns a user's check's history, newest first.
func (s *Store) Results(ctx context.Context, userID, id string, limit int) ([]Run, error) {
	if _, err := s.GetCheck(ctx, userID, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.names.Checks),
		KeyConditionExpression:    aws.String("PK = :id AND begins_with(SK, :r)"),
		ExpressionAttributeValues: map[string]av{":id": ddbitem.S(id), ":r": ddbitem.S(skResult)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("checks: results: %w", err)
	}
	runs := make([]Run, 0, len(out.Items))
	for _, it := range out.Items {
		runs = append(runs, Run{At: ddbitem.String(it, "SK")[len(skResult):], Result: anyMap(it, "result")})
	}
	return runs, nil
}

// Release gives up a claimed run without recording one (the user is
// suspended, say): the lease is removed, nextRunAt stays advanced.
func (s *Store) Release(ctx context.Context, id, owner string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
		UpdateExpression:          aws.String("REMOVE leaseOwner, leaseUntil"),
		ConditionExpression:       aws.String("leaseOwner = :me"),
		ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner)},
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: check %s", ErrLost, id)
	}
	if err != nil {
		return fmt.Errorf("checks: release %s: %w", id, err)
	}
	return nil
}

// The schedule change log: one item per change of a check's nextRunAt made
// outside a run (PATCH, resume, run now), in the CHECK table under
// PK = "SCHEDULE", SK = "CHANGE#<epoch ms, 13 digits>#<check id>", expired
// by TTL after ChangeLogRetention. Schedulers read the changes since their
// last refresh (ScheduleChanges) and re-read those checks' nextRunAt, so a
// change made through one process reaches every process's scheduler within
// its refresh period. The items carry no indexed attribute.
const (
	pkSchedule = "SCHEDULE"
	skChange   = "CHANGE#"
	// ChangeLogRetention is how long a schedule change is kept.
	ChangeLogRetention = time.Hour
)

func changeSK(t time.Time) string { return fmt.Sprintf("%s%013d#", skChange, max(ms(t), 0)) }

// noteScheduleChange records that check id's nextRunAt was changed.
func (s *Store) noteScheduleChange(ctx context.Context, id string) error {
	now := s.now()
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.names.Checks),
		Item: map[string]av{
			"PK": ddbitem.S(pkSchedule), "SK": ddbitem.S(changeSK(now) + id), "check": ddbitem.S(id),
			tables.TTLAttribute: ddbitem.N(now.Add(ChangeLogRetention).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("checks: note schedule change of %s (the change is made; other processes see it at its old due time): %w", id, err)
	}
	return nil
}

// ScheduleChanges returns the ids of the checks whose schedule changed at
// or after since (by the writer's clock), each once.
func (s *Store) ScheduleChanges(ctx context.Context, since time.Time) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.names.Checks),
		KeyConditionExpression:    aws.String("PK = :pk AND SK BETWEEN :from AND :to"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(pkSchedule), ":from": ddbitem.S(changeSK(since)), ":to": ddbitem.S(skChange + "\U0010ffff")},
		ProjectionExpression:      aws.String("#c"),
		ExpressionAttributeNames:  map[string]string{"#c": "check"},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("checks: schedule changes: %w", err)
		}
		for _, it := range page.Items {
			if id := ddbitem.String(it, "check"); id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}
