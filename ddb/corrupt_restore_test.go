package ddb_test

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/attr"
)

// lockedBuffer is a bytes.Buffer safe for the store's concurrent logging.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCorruptItemSkippedByRestoreAndTTL: restoring a table (from a backup,
// to a point in time) and enabling TTL skip a stored item that cannot be
// decoded, as Query and Scan do: the operation succeeds, the new table has
// every other item and index entry and not the damaged one, and the item is
// logged with its key and counted once in Metrics.CorruptItems.
func TestCorruptItemSkippedByRestoreAndTTL(t *testing.T) {
	skipIfExternal(t, "the embedded store's own behaviour")
	cases := []struct {
		name string
		gsi  bool
		// run does the operation on table tab and returns the table whose
		// items it produced ("": none).
		run func(t *testing.T, c *dynamodb.Client, tab string) string
	}{
		{"RestoreTableFromBackup", true, func(t *testing.T, c *dynamodb.Client, tab string) string {
			out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String(tab), BackupName: aws.String("bk1")})
			requireNoError(t, err, "CreateBackup")
			_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String(tab + "-restored"),
				BackupArn: out.BackupDetails.BackupArn})
			requireNoError(t, err, "RestoreTableFromBackup")
			return tab + "-restored"
		}},
		{"RestoreTableFromBackup without indexes", false, func(t *testing.T, c *dynamodb.Client, tab string) string {
			out, err := c.CreateBackup(tctx(t), &dynamodb.CreateBackupInput{TableName: aws.String(tab), BackupName: aws.String("bk1")})
			requireNoError(t, err, "CreateBackup")
			_, err = c.RestoreTableFromBackup(tctx(t), &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String(tab + "-restored"),
				BackupArn: out.BackupDetails.BackupArn})
			requireNoError(t, err, "RestoreTableFromBackup")
			return tab + "-restored"
		}},
		{"RestoreTableToPointInTime", true, func(t *testing.T, c *dynamodb.Client, tab string) string {
			_, err := c.RestoreTableToPointInTime(tctx(t), &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String(tab),
				TargetTableName: aws.String(tab + "-restored"), UseLatestRestorableTime: aws.Bool(true)})
			requireNoError(t, err, "RestoreTableToPointInTime")
			return tab + "-restored"
		}},
		{"UpdateTimeToLive", true, func(t *testing.T, c *dynamodb.Client, tab string) string {
			_, err := c.UpdateTimeToLive(tctx(t), &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tab),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
			requireNoError(t, err, "UpdateTimeToLive")
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs lockedBuffer
			s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			c := ddb.NewClient(s, noRetry)
			spec := tableSpec{Hash: "pk:S", Range: "sk:S"}
			if tc.gsi {
				spec.GSIs = []indexSpec{{Name: "by-g", Hash: "g:S"}}
			}
			tab := createTable(t, c, spec)
			pitrEnable(t, c, tab, true, nil)
			for _, sk := range []string{"a", "b", "c"} {
				putItems(t, c, tab, attrs{"pk": avS("p"), "sk": avS(sk), "g": avS("G"), "exp": avN("4000000000")})
			}
			if err := s.CorruptItemForTest(tab, attr.Item{"pk": attr.Str("p"), "sk": attr.Str("b")}, []byte{0x05, 0xff, 0x00}); err != nil {
				t.Fatal(err)
			}
			before := s.Metrics().CorruptItems

			got := tc.run(t, c, tab)

			if got != "" {
				key := func(sk string) string { return bkKey(attrs{"pk": avS("p"), "sk": avS(sk)}) }
				if items := bkScan(t, c, got); len(items) != 2 || items[key("a")] == "" || items[key("c")] == "" {
					t.Errorf("%s has %v, want p/a and p/c", got, items)
				}
				// The damaged item is absent, not carried over damaged.
				out, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(got), Key: attrs{"pk": avS("p"), "sk": avS("b")}})
				if err != nil || out.Item != nil {
					t.Errorf("GetItem of the skipped item in %s: %v %v, want no item", got, out, err)
				}
				if tc.gsi {
					out, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(got), IndexName: aws.String("by-g"),
						KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: attrs{":g": avS("G")}})
					requireNoError(t, err, "Query by-g")
					if len(out.Items) != 2 {
						t.Errorf("index by-g of %s: %d items, want 2", got, len(out.Items))
					}
				}
			}
			// Once: the damaged item was not copied (the reads of the new
			// table would have counted it again).
			if n := s.Metrics().CorruptItems - before; n != 1 {
				t.Errorf("Metrics.CorruptItems grew by %d, want 1", n)
			}
			l := logs.String()
			if !strings.Contains(l, "skipping a stored item that cannot be decoded") || !strings.Contains(l, `{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"b\"}}`) {
				t.Errorf("no log line naming the skipped item's key:\n%s", l)
			}
		})
	}
}

// TestCorruptLogRecordSkippedByPITR: a change-log record that cannot be
// decoded does not fail a point-in-time restore: the restore skips it,
// logs it and counts it in Metrics.CorruptItems, as it does a damaged
// item, and undoes the other changes after the restore time.
func TestCorruptLogRecordSkippedByPITR(t *testing.T) {
	skipIfExternal(t, "the embedded store's own behaviour")
	var logs lockedBuffer
	clk := newBKClock()
	s, c := bkOpen(t, t.TempDir(), clk, &ddb.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { s.Close() })
	bkCreate(t, c, bkTableSpec("src"))
	pitrEnable(t, c, "src", true, nil)
	item := func(sk, v string) attrs {
		return attrs{"pk": avS("p"), "sk": avN(sk), "g": avS("G"), "l": avN("1"), "v": avS(v)}
	}
	putItems(t, c, "src", item("1", "one"), item("2", "two"), item("3", "three"))
	at := clk.Now()
	clk.Advance(time.Second)
	putItems(t, c, "src", item("1", "changed"), item("4", "four"))
	// The second record: sk 2's insert, before the restore time.
	if err := s.CorruptLogRecordForTest("src", 1, []byte{0x05, 0xff, 0x00}); err != nil {
		t.Fatal(err)
	}
	before := s.Metrics().CorruptItems

	if err := pitrRestore(c, t, "src", "dst", at); err != nil {
		t.Fatalf("RestoreTableToPointInTime with a damaged log record: %v", err)
	}

	want := bkRender(map[string]attrs{
		bkKey(item("1", "")): item("1", "one"),
		bkKey(item("2", "")): item("2", "two"),
		bkKey(item("3", "")): item("3", "three"),
	})
	if got := bkScan(t, c, "dst"); !reflect.DeepEqual(got, want) {
		t.Errorf("restored table:\n got %v\nwant %v", got, want)
	}
	if n := s.Metrics().CorruptItems - before; n != 1 {
		t.Errorf("Metrics.CorruptItems grew by %d, want 1", n)
	}
	if l := logs.String(); !strings.Contains(l, "skipping a change-log record that cannot be decoded") {
		t.Errorf("no log line for the skipped record:\n%s", l)
	}
}
