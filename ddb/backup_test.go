package ddb_test

import (
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// bkClock is a settable clock for ddb.Options.Now: tests advance it instead
// of sleeping.
type bkClock struct {
	mu sync.Mutex
	t  time.Time
}

func newBKClock() *bkClock {
	// Near the real time (request signing uses the real clock), on a whole
	// second so that restore times are easy to reason about.
	return &bkClock{t: time.Now().Truncate(time.Second)}
}

func (c *bkClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *bkClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// bkOpen opens a store in dir with the stub clock.
func bkOpen(t *testing.T, dir string, clk *bkClock, opts *ddb.Options) (*ddb.Store, *dynamodb.Client) {
	t.Helper()
	o := ddb.Options{}
	if opts != nil {
		o = *opts
	}
	o.Now, o.NoSync = clk.Now, true
	s, err := ddb.Open(dir, &o)
	if err != nil {
		t.Fatalf("ddb.Open: %v", err)
	}
	return s, ddb.NewClient(s, noRetry)
}

// bkTableSpec is the table the backup and PITR tests use: a composite key,
// a sparse GSI and an LSI.
func bkTableSpec(name string) tableSpec {
	return tableSpec{
		Name:  name,
		Hash:  "pk:S",
		Range: "sk:N",
		GSIs:  []indexSpec{{Name: "byG", Hash: "g:S", Range: "sk:N"}},
		LSIs:  []indexSpec{{Name: "byL", Hash: "pk:S", Range: "l:N", Projection: types.ProjectionTypeKeysOnly}},
	}
}

func bkCreate(t *testing.T, c *dynamodb.Client, spec tableSpec) {
	t.Helper()
	if _, err := c.CreateTable(tctx(t), spec.input()); err != nil {
		t.Fatalf("CreateTable %s: %v", spec.Name, err)
	}
}

func bkKey(it attrs) string { return renderItem(attrs{"pk": it["pk"], "sk": it["sk"]}) }

// bkScan returns a table's items, keyed by their rendered key.
func bkScan(t *testing.T, c *dynamodb.Client, table string) map[string]string {
	t.Helper()
	items, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	out := map[string]string{}
	for _, it := range items {
		out[bkKey(it)] = renderItem(it)
	}
	return out
}

// bkRender renders a model the way bkScan renders a table.
func bkRender(model map[string]attrs) map[string]string {
	out := map[string]string{}
	for k, it := range model {
		out[k] = renderItem(it)
	}
	return out
}

func bkRequireSame(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: missing item %s (want %s)", what, k, w)
		} else if g != w {
			t.Errorf("%s: item %s\n got: %s\nwant: %s", what, k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected item %s", what, g)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// bkRequireIndexes checks that every item of model can be found through
// the table's GSI byG (when it has g) and LSI byL (when it has l), and that
// the indexes hold nothing else.
func bkRequireIndexes(t *testing.T, c *dynamodb.Client, table string, model map[string]attrs) {
	t.Helper()
	gWant, lWant := map[string][]string{}, map[string][]string{}
	for k, it := range model {
		if g := sAttr(it, "g"); g != "" {
			gWant[g] = append(gWant[g], renderItem(it))
		}
		if nAttr(it, "l") != "" {
			pk := sAttr(it, "pk")
			lWant[pk] = append(lWant[pk], k)
		}
	}
	sorted := func(s []string) []string { sort.Strings(s); return s }
	for g, want := range gWant {
		items := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byG"),
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: attrs{":g": avS(g)}})
		got := make([]string, len(items))
		for i, it := range items {
			got[i] = renderItem(it)
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			t.Fatalf("GSI byG g=%s:\n got: %v\nwant: %v", g, got, want)
		}
	}
	pks := map[string]bool{}
	for _, it := range model {
		pks[sAttr(it, "pk")] = true
	}
	for pk := range pks {
		items := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byL"),
			KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: attrs{":p": avS(pk)}})
		got := make([]string, len(items))
		for i, it := range items {
			got[i] = bkKey(it)
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(lWant[pk])) {
			t.Fatalf("LSI byL pk=%s:\n got: %v\nwant: %v", pk, got, lWant[pk])
		}
	}
	// Nothing beyond the model in the GSI.
	items, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(table), IndexName: aws.String("byG")})
	n := 0
	for _, w := range gWant {
		n += len(w)
	}
	if len(items) != n {
		t.Fatalf("GSI byG holds %d entries, want %d", len(items), n)
	}
}

// bkItem builds test item i; every third lacks the GSI key, every fourth
// the LSI key.
func bkItem(i int, v string) attrs {
	it := attrs{"pk": avS(fmt.Sprintf("p%d", i%4)), "sk": avN(fmt.Sprint(i)), "v": avS(v), "m": avM(attrs{"n": avN(fmt.Sprint(i * 10))})}
	if i%3 != 0 {
		it["g"] = avS(fmt.Sprintf("g%d", i%5))
	}
	if i%4 != 0 {
		it["l"] = avN(fmt.Sprint(100 - i))
	}
	return it
}

var backupArnRE = regexp.MustCompile(`^arn:aws:dynamodb:us-east-1:000000000000:table/src/backup/\d{14}-[0-9a-f]{8}$`)

func TestBackupRestoreRoundTrip(t *testing.T) {
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, nil)
	defer s.Close()
	bkCreate(t, c, bkTableSpec("src"))
	model := map[string]attrs{}
	for i := range 30 {
		it := bkItem(i, "orig")
		putItems(t, c, "src", it)
		model[bkKey(it)] = it
	}
	created := clk.Advance(time.Second)
	out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("bk1")})
	requireNoError(t, err, "CreateBackup")
	d := out.BackupDetails
	arn := aws.ToString(d.BackupArn)
	if !backupArnRE.MatchString(arn) {
		t.Fatalf("BackupArn %q does not match %s", arn, backupArnRE)
	}
	if aws.ToString(d.BackupName) != "bk1" || d.BackupStatus != types.BackupStatusAvailable || d.BackupType != types.BackupTypeUser ||
		aws.ToInt64(d.BackupSizeBytes) <= 0 || !d.BackupCreationDateTime.Equal(created) {
		t.Fatalf("BackupDetails: name %q status %s type %s size %d created %v (want %v)", aws.ToString(d.BackupName), d.BackupStatus, d.BackupType,
			aws.ToInt64(d.BackupSizeBytes), d.BackupCreationDateTime, created)
	}
	atBackup := bkRender(model)

	// Change the source: update, delete, insert.
	clk.Advance(time.Second)
	for i := range 30 {
		switch i % 3 {
		case 0:
			_, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String("src"), Key: attrs{"pk": avS(fmt.Sprintf("p%d", i%4)), "sk": avN(fmt.Sprint(i))}})
			requireNoError(t, err, "DeleteItem")
		case 1:
			putItems(t, c, "src", bkItem(i, "changed"))
		}
	}
	putItems(t, c, "src", bkItem(100, "new"))

	desc, err := c.DescribeBackup(tctx(t), &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
	requireNoError(t, err, "DescribeBackup")
	st, ft := desc.BackupDescription.SourceTableDetails, desc.BackupDescription.SourceTableFeatureDetails
	if aws.ToString(st.TableName) != "src" || aws.ToInt64(st.ItemCount) != 30 || aws.ToString(st.TableArn) != "arn:aws:dynamodb:us-east-1:000000000000:table/src" ||
		aws.ToString(st.TableId) == "" || len(st.KeySchema) != 2 || st.BillingMode != types.BillingModePayPerRequest || aws.ToInt64(st.TableSizeBytes) <= 0 {
		t.Fatalf("SourceTableDetails: %+v", st)
	}
	if len(ft.GlobalSecondaryIndexes) != 1 || aws.ToString(ft.GlobalSecondaryIndexes[0].IndexName) != "byG" ||
		len(ft.LocalSecondaryIndexes) != 1 || aws.ToString(ft.LocalSecondaryIndexes[0].IndexName) != "byL" {
		t.Fatalf("SourceTableFeatureDetails: %+v", ft)
	}

	res, err := c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("dst"), BackupArn: aws.String(arn)})
	requireNoError(t, err, "RestoreTableFromBackup")
	td := res.TableDescription
	if aws.ToString(td.TableName) != "dst" || td.RestoreSummary == nil || aws.ToString(td.RestoreSummary.SourceBackupArn) != arn ||
		aws.ToString(td.RestoreSummary.SourceTableArn) != "arn:aws:dynamodb:us-east-1:000000000000:table/src" ||
		!td.RestoreSummary.RestoreDateTime.Equal(created) || len(td.GlobalSecondaryIndexes) != 1 || len(td.LocalSecondaryIndexes) != 1 {
		t.Fatalf("restore TableDescription: %+v, summary %+v", td, td.RestoreSummary)
	}
	if dt := waitActive(t, c, "dst"); aws.ToInt64(dt.ItemCount) != 30 {
		t.Fatalf("restored ItemCount %d, want 30", aws.ToInt64(dt.ItemCount))
	}
	bkRequireSame(t, "restored table", bkScan(t, c, "dst"), atBackup)
	bkRequireIndexes(t, c, "dst", model)

	// The restored table is independent of the source and writable.
	putItems(t, c, "dst", bkItem(200, "dst-only"))
	if it := getItem(t, c, "src", attrs{"pk": avS("p0"), "sk": avN("200")}); it != nil {
		t.Fatalf("write to the restored table is visible in the source: %s", renderItem(it))
	}

	// Restoring again into an existing name fails.
	_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("dst"), BackupArn: aws.String(arn)})
	requireAPIError(t, err, "TableAlreadyExistsException", "dst")
	_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("src"), BackupArn: aws.String(arn)})
	requireAPIError(t, err, "TableAlreadyExistsException", "src")

	// Backups outlive their table; delete removes them.
	_, err = c.DeleteTable(tctx(t), &dynamodb.DeleteTableInput{TableName: aws.String("src")})
	requireNoError(t, err, "DeleteTable")
	_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("src"), BackupArn: aws.String(arn)})
	requireNoError(t, err, "RestoreTableFromBackup after DeleteTable")
	bkRequireSame(t, "table restored under the source's name", bkScan(t, c, "src"), atBackup)

	del, err := c.DeleteBackup(tctx(t), &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)})
	requireNoError(t, err, "DeleteBackup")
	if d := del.BackupDescription.BackupDetails; aws.ToString(d.BackupArn) != arn || d.BackupStatus != types.BackupStatus("DELETED") {
		t.Fatalf("DeleteBackup details: %+v", d)
	}
	_, err = c.DescribeBackup(tctx(t), &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
	requireAPIError(t, err, "BackupNotFoundException", "Backup not found: "+arn)
	_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("dst2"), BackupArn: aws.String(arn)})
	requireAPIError(t, err, "BackupNotFoundException", arn)
	_, err = c.DeleteBackup(tctx(t), &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)})
	requireAPIError(t, err, "BackupNotFoundException", arn)
}

func TestBackupListAndErrors(t *testing.T) {
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, nil)
	defer s.Close()
	bkCreate(t, c, tableSpec{Name: "src", Hash: "pk:S"})
	bkCreate(t, c, tableSpec{Name: "other", Hash: "pk:S"})

	_, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("missing"), BackupName: aws.String("b")})
	requireAPIError(t, err, "ValidationException", "backupName")
	_, err = c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("missing"), BackupName: aws.String("bkp")})
	requireAPIError(t, err, "TableNotFoundException", "Table not found: missing")
	_, err = c.DescribeBackup(tctx(t), &dynamodb.DescribeBackupInput{BackupArn: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/src/backup/01700000000000-00000000")})
	requireAPIError(t, err, "BackupNotFoundException", "Backup not found")

	var arns []string
	var times []time.Time
	for i := range 3 {
		times = append(times, clk.Advance(time.Minute))
		out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String(fmt.Sprintf("bk%d", i))})
		requireNoError(t, err, "CreateBackup")
		arns = append(arns, aws.ToString(out.BackupDetails.BackupArn))
	}
	// A table ARN is accepted in place of its name.
	out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/other"), BackupName: aws.String("oth")})
	requireNoError(t, err, "CreateBackup by ARN")
	otherArn := aws.ToString(out.BackupDetails.BackupArn)

	list := func(in *dynamodb.ListBackupsInput) ([]string, *string) {
		t.Helper()
		out, err := c.ListBackups(tctx(t), in)
		requireNoError(t, err, "ListBackups")
		var got []string
		for _, b := range out.BackupSummaries {
			got = append(got, aws.ToString(b.BackupArn))
			if aws.ToString(b.BackupArn) == arns[0] && (aws.ToString(b.TableName) != "src" || aws.ToString(b.BackupName) != "bk0" ||
				b.BackupStatus != types.BackupStatusAvailable || !b.BackupCreationDateTime.Equal(times[0])) {
				t.Fatalf("BackupSummary: %+v", b)
			}
		}
		return got, out.LastEvaluatedBackupArn
	}
	if got, last := list(&dynamodb.ListBackupsInput{TableName: aws.String("src")}); fmt.Sprint(got) != fmt.Sprint(arns) || last != nil {
		t.Fatalf("ListBackups(src) = %v, %v; want %v", got, last, arns)
	}
	if got, _ := list(&dynamodb.ListBackupsInput{}); len(got) != 4 {
		t.Fatalf("ListBackups() = %v, want 4 backups", got)
	}
	got, last := list(&dynamodb.ListBackupsInput{TableName: aws.String("src"), Limit: aws.Int32(2)})
	if fmt.Sprint(got) != fmt.Sprint(arns[:2]) || aws.ToString(last) != arns[1] {
		t.Fatalf("page 1 = %v, last %v", got, aws.ToString(last))
	}
	got, last = list(&dynamodb.ListBackupsInput{TableName: aws.String("src"), Limit: aws.Int32(2), ExclusiveStartBackupArn: last})
	if fmt.Sprint(got) != fmt.Sprint(arns[2:]) || last != nil {
		t.Fatalf("page 2 = %v, last %v", got, aws.ToString(last))
	}
	// Lower bound inclusive, upper exclusive.
	got, _ = list(&dynamodb.ListBackupsInput{TableName: aws.String("src"), TimeRangeLowerBound: aws.Time(times[1]), TimeRangeUpperBound: aws.Time(times[2])})
	if fmt.Sprint(got) != fmt.Sprint(arns[1:2]) {
		t.Fatalf("time range = %v, want %v", got, arns[1:2])
	}
	if got, _ := list(&dynamodb.ListBackupsInput{BackupType: types.BackupTypeFilterSystem}); len(got) != 0 {
		t.Fatalf("SYSTEM backups = %v", got)
	}
	if got, _ := list(&dynamodb.ListBackupsInput{TableName: aws.String("other"), BackupType: types.BackupTypeFilterAll}); fmt.Sprint(got) != fmt.Sprint([]string{otherArn}) {
		t.Fatalf("ListBackups(other) = %v", got)
	}
	_, err = c.ListBackups(tctx(t), &dynamodb.ListBackupsInput{Limit: aws.Int32(0)})
	requireAPIError(t, err, "ValidationException", "limit")
}

func TestBackupSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	clk := newBKClock()
	s, c := bkOpen(t, dir, clk, nil)
	bkCreate(t, c, bkTableSpec("src"))
	model := map[string]attrs{}
	for i := range 12 {
		it := bkItem(i, "x")
		putItems(t, c, "src", it)
		model[bkKey(it)] = it
	}
	out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("keep")})
	requireNoError(t, err, "CreateBackup")
	arn := aws.ToString(out.BackupDetails.BackupArn)
	putItems(t, c, "src", bkItem(50, "after"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, c = bkOpen(t, dir, clk, nil)
	lo, err := c.ListBackups(tctx(t), &dynamodb.ListBackupsInput{})
	requireNoError(t, err, "ListBackups")
	if len(lo.BackupSummaries) != 1 || aws.ToString(lo.BackupSummaries[0].BackupArn) != arn {
		t.Fatalf("backups after reopen: %+v", lo.BackupSummaries)
	}
	_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("dst"), BackupArn: aws.String(arn)})
	requireNoError(t, err, "RestoreTableFromBackup")
	bkRequireSame(t, "restored after reopen", bkScan(t, c, "dst"), bkRender(model))
	bkRequireIndexes(t, c, "dst", model)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The restored table persists too.
	s, c = bkOpen(t, dir, clk, nil)
	defer s.Close()
	bkRequireSame(t, "restored table after reopen", bkScan(t, c, "dst"), bkRender(model))
}

func TestBackupRestoreOverrides(t *testing.T) {
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, nil)
	defer s.Close()
	bkCreate(t, c, bkTableSpec("src"))
	putItems(t, c, "src", bkItem(1, "a"), bkItem(2, "b"))
	out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("ovr")})
	requireNoError(t, err, "CreateBackup")
	arn := out.BackupDetails.BackupArn

	// No indexes, provisioned billing.
	res, err := c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{
		TargetTableName: aws.String("plain"), BackupArn: arn,
		GlobalSecondaryIndexOverride: []types.GlobalSecondaryIndex{}, LocalSecondaryIndexOverride: []types.LocalSecondaryIndex{},
		BillingModeOverride: types.BillingModeProvisioned, ProvisionedThroughputOverride: provisioned5,
	})
	requireNoError(t, err, "RestoreTableFromBackup with overrides")
	td := res.TableDescription
	if len(td.GlobalSecondaryIndexes)+len(td.LocalSecondaryIndexes) != 0 || td.BillingModeSummary != nil ||
		aws.ToInt64(td.ProvisionedThroughput.ReadCapacityUnits) != 5 || len(td.AttributeDefinitions) != 2 {
		t.Fatalf("overridden table: %+v", td)
	}
	if n := len(bkScan(t, c, "plain")); n != 2 {
		t.Fatalf("plain has %d items, want 2", n)
	}
	// An override must name an index of the source.
	_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{
		TargetTableName: aws.String("bad"), BackupArn: arn,
		GlobalSecondaryIndexOverride: []types.GlobalSecondaryIndex{{IndexName: aws.String("nope"), KeySchema: specKeySchema("g:S", ""),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
	})
	requireAPIError(t, err, "ValidationException", "nope")
	if _, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String("bad")}); apiErrorCode(err) != "ResourceNotFoundException" {
		t.Fatalf("failed restore left a table behind: %v", err)
	}
}

// TestBackupConsistentUnderWrites takes backups and point-in-time restores
// while a writer increments counters 0..n-1 round-robin: a consistent copy
// has c[0] >= c[1] >= ... >= c[n-1] >= c[0]-1.
func TestBackupConsistentUnderWrites(t *testing.T) {
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, nil)
	defer s.Close()
	bkCreate(t, c, tableSpec{Name: "src", Hash: "pk:S"})
	pitrEnable(t, c, "src", true, nil)
	const n = 20
	for i := range n {
		putItems(t, c, "src", attrs{"pk": avS(fmt.Sprintf("k%02d", i)), "c": avN("0")})
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for round := 0; ; round++ {
			for i := range n {
				select {
				case <-stop:
					return
				default:
				}
				_, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String("src"),
					Key: attrs{"pk": avS(fmt.Sprintf("k%02d", i))}, UpdateExpression: aws.String("ADD c :one"),
					ExpressionAttributeValues: attrs{":one": avN("1")}})
				if err != nil {
					done <- err
					return
				}
			}
		}
	}()
	check := func(table string) {
		t.Helper()
		items, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(table)})
		cs := make([]int, n)
		for _, it := range items {
			var i, v int
			fmt.Sscanf(sAttr(it, "pk"), "k%d", &i)
			fmt.Sscan(nAttr(it, "c"), &v)
			cs[i] = v
		}
		if len(items) != n {
			t.Fatalf("%s has %d items, want %d", table, len(items), n)
		}
		for i := 1; i < n; i++ {
			if cs[i] > cs[i-1] || cs[i] < cs[0]-1 {
				t.Fatalf("%s is not a consistent copy: counters %v", table, cs)
			}
		}
	}
	for i := range 4 {
		out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String(fmt.Sprintf("live%d", i))})
		requireNoError(t, err, "CreateBackup")
		target := fmt.Sprintf("fromBackup%d", i)
		_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String(target), BackupArn: out.BackupDetails.BackupArn})
		requireNoError(t, err, "RestoreTableFromBackup")
		check(target)
		target = fmt.Sprintf("fromPITR%d", i)
		_, err = c.RestoreTableToPointInTime(tctx(t), &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("src"),
			TargetTableName: aws.String(target), UseLatestRestorableTime: aws.Bool(true)})
		requireNoError(t, err, "RestoreTableToPointInTime")
		check(target)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("writer: %v", err)
	}
}
