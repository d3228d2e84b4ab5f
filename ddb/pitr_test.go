package ddb_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

func pitrDescribe(t *testing.T, c *dynamodb.Client, table string) *types.PointInTimeRecoveryDescription {
	t.Helper()
	out, err := c.DescribeContinuousBackups(tctx(t), &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(table)})
	requireNoError(t, err, "DescribeContinuousBackups")
	if out.ContinuousBackupsDescription.ContinuousBackupsStatus != types.ContinuousBackupsStatusEnabled {
		t.Fatalf("ContinuousBackupsStatus = %s", out.ContinuousBackupsDescription.ContinuousBackupsStatus)
	}
	return out.ContinuousBackupsDescription.PointInTimeRecoveryDescription
}

func pitrEnable(t *testing.T, c *dynamodb.Client, table string, enabled bool, days *int32) *types.PointInTimeRecoveryDescription {
	t.Helper()
	out, err := c.UpdateContinuousBackups(tctx(t), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(table),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(enabled), RecoveryPeriodInDays: days}})
	requireNoError(t, err, "UpdateContinuousBackups")
	return out.ContinuousBackupsDescription.PointInTimeRecoveryDescription
}

func pitrRestore(c *dynamodb.Client, t *testing.T, source, target string, at time.Time) error {
	_, err := c.RestoreTableToPointInTime(tctx(t), &dynamodb.RestoreTableToPointInTimeInput{
		SourceTableName: aws.String(source), TargetTableName: aws.String(target), RestoreDateTime: aws.Time(at)})
	return err
}

func cloneModel(m map[string]attrs) map[string]attrs {
	out := make(map[string]attrs, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPointInTimeRestore runs puts, updates and deletes (single and batch)
// a few hundred milliseconds apart under PITR, keeping a model of the table
// after each, then restores to three times and to the latest time and
// compares each restored table, and its indexes, with the model of then.
func TestPointInTimeRestore(t *testing.T) {
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, nil)
	defer s.Close()
	bkCreate(t, c, bkTableSpec("src"))

	if p := pitrDescribe(t, c, "src"); p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled || p.EarliestRestorableDateTime != nil {
		t.Fatalf("PITR of a new table: %+v", p)
	}
	err := pitrRestore(c, t, "src", "dst", clk.Now())
	requireAPIError(t, err, "PointInTimeRecoveryUnavailableException", "")

	// Items from before PITR is enabled are part of every restorable state.
	model := map[string]attrs{}
	for i := range 8 {
		it := bkItem(i, "pre")
		putItems(t, c, "src", it)
		model[bkKey(it)] = it
	}
	enabledAt := clk.Advance(time.Second)
	p := pitrEnable(t, c, "src", true, nil)
	if p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled || !p.EarliestRestorableDateTime.Equal(enabledAt) ||
		!p.LatestRestorableDateTime.Equal(enabledAt) || aws.ToInt32(p.RecoveryPeriodInDays) != 35 {
		t.Fatalf("after enabling: %+v (enabled at %v)", p, enabledAt)
	}

	type state struct {
		at    time.Time
		model map[string]attrs
	}
	states := []state{{enabledAt, cloneModel(model)}}
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 60 {
		now := clk.Advance(time.Duration(100+r.IntN(400)) * time.Millisecond)
		i := r.IntN(16)
		key := attrs{"pk": avS(fmt.Sprintf("p%d", i%4)), "sk": avN(fmt.Sprint(i))}
		switch op := r.IntN(4); op {
		case 0: // put
			it := bkItem(i, fmt.Sprintf("put%d", step))
			putItems(t, c, "src", it)
			model[bkKey(it)] = it
		case 1: // update (creates the item if absent)
			out, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String("src"), Key: key,
				UpdateExpression:          aws.String("SET v = :v, g = :g ADD n :one REMOVE l"),
				ExpressionAttributeValues: attrs{":v": avS(fmt.Sprintf("upd%d", step)), ":g": avS(fmt.Sprintf("g%d", step%3)), ":one": avN("1")},
				ReturnValues:              types.ReturnValueAllNew})
			requireNoError(t, err, "UpdateItem")
			model[bkKey(key)] = out.Attributes
		case 2: // delete
			_, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String("src"), Key: key})
			requireNoError(t, err, "DeleteItem")
			delete(model, bkKey(key))
		case 3: // batch: put one, delete another
			it := bkItem((i+5)%16, fmt.Sprintf("batch%d", step))
			_, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"src": {
				{PutRequest: &types.PutRequest{Item: it}},
				{DeleteRequest: &types.DeleteRequest{Key: key}},
			}}})
			requireNoError(t, err, "BatchWriteItem")
			model[bkKey(it)] = it
			delete(model, bkKey(key))
		}
		states = append(states, state{now, cloneModel(model)})
	}
	clk.Advance(time.Second)
	final := bkRender(model)

	// stateAt returns the model as of time at: after every change at or
	// before it.
	stateAt := func(at time.Time) map[string]attrs {
		var m map[string]attrs
		for _, st := range states {
			if !st.at.After(at) {
				m = st.model
			}
		}
		return m
	}
	times := []time.Time{
		enabledAt.Add(time.Second), // early: most of the history undone
		states[30].at,              // exactly at a change: the change is included
		states[45].at.Add(time.Millisecond * 50).Truncate(time.Second), // a whole second
	}
	for n, at := range times {
		want := stateAt(at)
		if want == nil {
			t.Fatalf("no state at %v", at)
		}
		target := fmt.Sprintf("dst%d", n)
		res, err := c.RestoreTableToPointInTime(tctx(t), &dynamodb.RestoreTableToPointInTimeInput{
			SourceTableName: aws.String("src"), TargetTableName: aws.String(target), RestoreDateTime: aws.Time(at)})
		requireNoError(t, err, "RestoreTableToPointInTime "+target)
		if sum := res.TableDescription.RestoreSummary; sum == nil || !sum.RestoreDateTime.Equal(at) ||
			aws.ToString(sum.SourceTableArn) != "arn:aws:dynamodb:us-east-1:000000000000:table/src" || sum.SourceBackupArn != nil {
			t.Fatalf("RestoreSummary: %+v", sum)
		}
		bkRequireSame(t, fmt.Sprintf("restore to %v", at.Sub(enabledAt)), bkScan(t, c, target), bkRender(want))
		bkRequireIndexes(t, c, target, want)
		// The restored table does not inherit PITR.
		if p := pitrDescribe(t, c, target); p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
			t.Fatalf("restored table has PITR %s", p.PointInTimeRecoveryStatus)
		}
	}
	// Latest restorable time, source named by ARN: the current items.
	_, err = c.RestoreTableToPointInTime(tctx(t), &dynamodb.RestoreTableToPointInTimeInput{
		SourceTableArn: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/src"), TargetTableName: aws.String("latest"), UseLatestRestorableTime: aws.Bool(true)})
	requireNoError(t, err, "RestoreTableToPointInTime latest")
	bkRequireSame(t, "latest", bkScan(t, c, "latest"), final)
	// The source is untouched.
	bkRequireSame(t, "source", bkScan(t, c, "src"), final)

	// Errors.
	p = pitrDescribe(t, c, "src")
	requireAPIError(t, pitrRestore(c, t, "src", "xx1", p.EarliestRestorableDateTime.Add(-time.Millisecond)), "InvalidRestoreTimeException", "")
	requireAPIError(t, pitrRestore(c, t, "src", "xx2", clk.Now().Add(time.Second)), "InvalidRestoreTimeException", "")
	requireAPIError(t, pitrRestore(c, t, "nosuch", "xx3", clk.Now()), "SourceTableNotFoundException", "nosuch")
	requireAPIError(t, pitrRestore(c, t, "src", "dst0", clk.Now()), "TableAlreadyExistsException", "dst0")
	requireAPIError(t, pitrRestore(c, t, "src", "src", clk.Now()), "TableAlreadyExistsException", "src")
	for _, name := range []string{"xx1", "xx2", "xx3"} {
		if _, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)}); apiErrorCode(err) != "ResourceNotFoundException" {
			t.Fatalf("failed restore created %s: %v", name, err)
		}
	}
}

func TestPITRWindowAndSettings(t *testing.T) {
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, &ddb.Options{PITRRetention: 2 * time.Minute})
	defer s.Close()
	bkCreate(t, c, tableSpec{Name: "src", Hash: "pk:S"})

	_, err := c.DescribeContinuousBackups(tctx(t), &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("nosuch")})
	requireAPIError(t, err, "TableNotFoundException", "nosuch")
	_, err = c.UpdateContinuousBackups(tctx(t), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("nosuch"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}})
	requireAPIError(t, err, "TableNotFoundException", "nosuch")
	_, err = c.UpdateContinuousBackups(tctx(t), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("src"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true), RecoveryPeriodInDays: aws.Int32(36)}})
	requireAPIError(t, err, "ValidationException", "recoveryPeriodInDays")

	enabledAt := clk.Now()
	if p := pitrEnable(t, c, "src", true, aws.Int32(7)); aws.ToInt32(p.RecoveryPeriodInDays) != 7 {
		t.Fatalf("RecoveryPeriodInDays = %d, want 7", aws.ToInt32(p.RecoveryPeriodInDays))
	}
	putItems(t, c, "src", attrs{"pk": avS("a"), "v": avN("1")})
	clk.Advance(30 * time.Second)
	putItems(t, c, "src", attrs{"pk": avS("a"), "v": avN("2")})
	clk.Advance(time.Minute)
	// Within the window: the first version.
	requireNoError(t, pitrRestore(c, t, "src", "early", enabledAt.Add(time.Second)), "restore in window")
	if it := getItem(t, c, "early", attrs{"pk": avS("a")}); nAttr(it, "v") != "1" {
		t.Fatalf("restored item: %s", renderItem(it))
	}

	// The window is capped by Options.PITRRetention (2 minutes < 7 days).
	now := clk.Advance(2 * time.Minute)
	p := pitrDescribe(t, c, "src")
	if !p.EarliestRestorableDateTime.Equal(now.Add(-2*time.Minute)) || !p.LatestRestorableDateTime.Equal(now) {
		t.Fatalf("window %v..%v, want %v..%v", p.EarliestRestorableDateTime, p.LatestRestorableDateTime, now.Add(-2*time.Minute), now)
	}
	requireAPIError(t, pitrRestore(c, t, "src", "late", enabledAt.Add(time.Second)), "InvalidRestoreTimeException", "")

	// Disabling and re-enabling starts a new window.
	if p := pitrEnable(t, c, "src", false, nil); p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled || p.EarliestRestorableDateTime != nil {
		t.Fatalf("after disabling: %+v", p)
	}
	requireAPIError(t, pitrRestore(c, t, "src", "off", clk.Now()), "PointInTimeRecoveryUnavailableException", "")
	clk.Advance(time.Second)
	putItems(t, c, "src", attrs{"pk": avS("a"), "v": avN("3")}) // unlogged
	again := clk.Advance(time.Second)
	p = pitrEnable(t, c, "src", true, nil)
	if !p.EarliestRestorableDateTime.Equal(again) || aws.ToInt32(p.RecoveryPeriodInDays) != 35 {
		t.Fatalf("after re-enabling: %+v", p)
	}
	requireAPIError(t, pitrRestore(c, t, "src", "before", again.Add(-time.Millisecond)), "InvalidRestoreTimeException", "")
	clk.Advance(time.Second)
	putItems(t, c, "src", attrs{"pk": avS("a"), "v": avN("4")})
	requireNoError(t, pitrRestore(c, t, "src", "again", again), "restore at re-enable time")
	if it := getItem(t, c, "again", attrs{"pk": avS("a")}); nAttr(it, "v") != "3" {
		t.Fatalf("restored item: %s", renderItem(it))
	}
}
