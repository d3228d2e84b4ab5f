package ddb_test

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func describe(t *testing.T, c *dynamodb.Client, name string) *types.TableDescription {
	t.Helper()
	out, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	requireNoError(t, err, "DescribeTable")
	return out.Table
}

func renderKeySchema(ks []types.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, e := range ks {
		parts[i] = aws.ToString(e.AttributeName) + ":" + string(e.KeyType)
	}
	return strings.Join(parts, ",")
}

func renderDefs(defs []types.AttributeDefinition) string {
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = aws.ToString(d.AttributeName) + ":" + string(d.AttributeType)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func TestSDKCreateTableKeyTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		hash, rng string
		item      attrs
	}{
		{"pk:S", "", attrs{"pk": avS("a")}},
		{"pk:N", "", attrs{"pk": avN("-12.5")}},
		{"pk:B", "", attrs{"pk": avB([]byte{0, 1, 255})}},
		{"pk:S", "sk:S", attrs{"pk": avS("a"), "sk": avS("b")}},
		{"pk:S", "sk:N", attrs{"pk": avS("a"), "sk": avN("3")}},
		{"pk:N", "sk:B", attrs{"pk": avN("7"), "sk": avB([]byte("x"))}},
		{"pk:B", "sk:S", attrs{"pk": avB([]byte("k")), "sk": avS("s")}},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.hash+"_"+tc.rng, ":", ""), func(t *testing.T) {
			t.Parallel()
			c := newClient(t)
			before := time.Now()
			name := createTable(t, c, tableSpec{Hash: tc.hash, Range: tc.rng})
			d := describe(t, c, name)
			wantKS := renderKeySchema(specKeySchema(tc.hash, tc.rng))
			if got := renderKeySchema(d.KeySchema); got != wantKS {
				t.Errorf("KeySchema = %s, want %s", got, wantKS)
			}
			wantDefs := tc.hash
			if tc.rng != "" {
				wantDefs = strings.Join([]string{tc.hash, tc.rng}, ",")
				parts := strings.Split(wantDefs, ",")
				sort.Strings(parts)
				wantDefs = strings.Join(parts, ",")
			}
			if got := renderDefs(d.AttributeDefinitions); got != wantDefs {
				t.Errorf("AttributeDefinitions = %s, want %s", got, wantDefs)
			}
			if aws.ToString(d.TableName) != name {
				t.Errorf("TableName = %q", aws.ToString(d.TableName))
			}
			if d.TableStatus != types.TableStatusActive {
				t.Errorf("TableStatus = %s", d.TableStatus)
			}
			arn := aws.ToString(d.TableArn)
			if !strings.HasPrefix(arn, "arn:aws:dynamodb:") || !strings.HasSuffix(arn, ":table/"+name) {
				t.Errorf("TableArn = %q", arn)
			}
			if d.CreationDateTime == nil || d.CreationDateTime.Before(before.Add(-5*time.Second)) || d.CreationDateTime.After(time.Now().Add(5*time.Second)) {
				t.Errorf("CreationDateTime = %v, want about %v", d.CreationDateTime, before)
			}
			if aws.ToInt64(d.ItemCount) != 0 {
				t.Errorf("ItemCount = %d, want 0", aws.ToInt64(d.ItemCount))
			}
			item := attrs{"v": avS("value")}
			for k, v := range tc.item {
				item[k] = v
			}
			putItems(t, c, name, item)
			requireItem(t, getItem(t, c, name, tc.item), item)
			// DynamoDB refreshes ItemCount about every six hours; the
			// embedded store counts live.
			if n := aws.ToInt64(describe(t, c, name).ItemCount); n != 1 && !isExternal() {
				t.Errorf("ItemCount after a put = %d, want 1", n)
			}
		})
	}
}

func TestSDKCreateTableIndexes(t *testing.T) {
	t.Parallel()
	for _, prov := range []bool{false, true} {
		t.Run(fmt.Sprintf("provisioned=%v", prov), func(t *testing.T) {
			t.Parallel()
			c := newClient(t)
			spec := tableSpec{
				Hash: "pk:S", Range: "sk:N", Provisioned: prov,
				GSIs: []indexSpec{
					{Name: "gsi_all", Hash: "g:S", Range: "sk:N", Projection: types.ProjectionTypeAll},
					{Name: "gsi_keys", Hash: "g:S", Projection: types.ProjectionTypeKeysOnly},
					{Name: "gsi_inc", Hash: "g2:N", Projection: types.ProjectionTypeInclude, Include: []string{"a", "b"}},
				},
				LSIs: []indexSpec{
					{Name: "lsi_all", Hash: "pk:S", Range: "l:S", Projection: types.ProjectionTypeAll},
					{Name: "lsi_keys", Hash: "pk:S", Range: "l2:N", Projection: types.ProjectionTypeKeysOnly},
					{Name: "lsi_inc", Hash: "pk:S", Range: "l:S", Projection: types.ProjectionTypeInclude, Include: []string{"c"}},
				},
			}
			name := createTable(t, c, spec)
			putItems(t, c, name,
				attrs{"pk": avS("p"), "sk": avN("1"), "g": avS("x"), "l": avS("l1"), "a": avS("A")},
				attrs{"pk": avS("p"), "sk": avN("2"), "g": avS("x"), "g2": avN("5")},
				attrs{"pk": avS("p"), "sk": avN("3"), "l2": avN("9")},
			)
			d := describe(t, c, name)
			if d.TableStatus != types.TableStatusActive {
				t.Errorf("TableStatus = %s", d.TableStatus)
			}
			if aws.ToInt64(d.ItemCount) != 3 && !isExternal() {
				t.Errorf("ItemCount = %d, want 3", aws.ToInt64(d.ItemCount))
			}
			wantDefs := "g2:N,g:S,l2:N,l:S,pk:S,sk:N"
			if got := renderDefs(d.AttributeDefinitions); got != wantDefs {
				t.Errorf("AttributeDefinitions = %s, want %s", got, wantDefs)
			}
			if prov {
				pt := d.ProvisionedThroughput
				if pt == nil || aws.ToInt64(pt.ReadCapacityUnits) != 5 || aws.ToInt64(pt.WriteCapacityUnits) != 5 {
					t.Errorf("ProvisionedThroughput = %+v, want 5/5", pt)
				}
			} else if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
				t.Errorf("BillingModeSummary = %+v, want PAY_PER_REQUEST", d.BillingModeSummary)
			}
			type want struct {
				ks, proj, include string
				count             int64
			}
			gsis := map[string]want{
				"gsi_all":  {"g:HASH,sk:RANGE", "ALL", "", 2},
				"gsi_keys": {"g:HASH", "KEYS_ONLY", "", 2},
				"gsi_inc":  {"g2:HASH", "INCLUDE", "a,b", 1},
			}
			if len(d.GlobalSecondaryIndexes) != len(gsis) {
				t.Fatalf("%d GSIs described, want %d", len(d.GlobalSecondaryIndexes), len(gsis))
			}
			for _, g := range d.GlobalSecondaryIndexes {
				w, ok := gsis[aws.ToString(g.IndexName)]
				if !ok {
					t.Errorf("unexpected GSI %q", aws.ToString(g.IndexName))
					continue
				}
				checkIndex(t, aws.ToString(g.IndexName), g.KeySchema, g.Projection, aws.ToInt64(g.ItemCount), w.ks, w.proj, w.include, w.count)
				if g.IndexStatus != types.IndexStatusActive {
					t.Errorf("GSI %s IndexStatus = %s", aws.ToString(g.IndexName), g.IndexStatus)
				}
				if arn := aws.ToString(g.IndexArn); arn != aws.ToString(d.TableArn)+"/index/"+aws.ToString(g.IndexName) {
					t.Errorf("IndexArn = %q", arn)
				}
				if prov && (g.ProvisionedThroughput == nil || aws.ToInt64(g.ProvisionedThroughput.ReadCapacityUnits) != 5) {
					t.Errorf("GSI %s ProvisionedThroughput = %+v", aws.ToString(g.IndexName), g.ProvisionedThroughput)
				}
			}
			lsis := map[string]want{
				"lsi_all":  {"pk:HASH,l:RANGE", "ALL", "", 1},
				"lsi_keys": {"pk:HASH,l2:RANGE", "KEYS_ONLY", "", 1},
				"lsi_inc":  {"pk:HASH,l:RANGE", "INCLUDE", "c", 1},
			}
			if len(d.LocalSecondaryIndexes) != len(lsis) {
				t.Fatalf("%d LSIs described, want %d", len(d.LocalSecondaryIndexes), len(lsis))
			}
			for _, l := range d.LocalSecondaryIndexes {
				w, ok := lsis[aws.ToString(l.IndexName)]
				if !ok {
					t.Errorf("unexpected LSI %q", aws.ToString(l.IndexName))
					continue
				}
				checkIndex(t, aws.ToString(l.IndexName), l.KeySchema, l.Projection, aws.ToInt64(l.ItemCount), w.ks, w.proj, w.include, w.count)
				if arn := aws.ToString(l.IndexArn); arn != aws.ToString(d.TableArn)+"/index/"+aws.ToString(l.IndexName) {
					t.Errorf("IndexArn = %q", arn)
				}
			}
		})
	}
}

func checkIndex(t *testing.T, name string, ks []types.KeySchemaElement, p *types.Projection, count int64, wantKS, wantProj, wantInclude string, wantCount int64) {
	t.Helper()
	if got := renderKeySchema(ks); got != wantKS {
		t.Errorf("index %s KeySchema = %s, want %s", name, got, wantKS)
	}
	if p == nil {
		t.Errorf("index %s has no Projection", name)
		return
	}
	inc := append([]string(nil), p.NonKeyAttributes...)
	sort.Strings(inc)
	if string(p.ProjectionType) != wantProj || strings.Join(inc, ",") != wantInclude {
		t.Errorf("index %s Projection = %s %v, want %s [%s]", name, p.ProjectionType, inc, wantProj, wantInclude)
	}
	if count != wantCount && !isExternal() {
		t.Errorf("index %s ItemCount = %d, want %d", name, count, wantCount)
	}
}

func TestSDKCreateTableStream(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "dynalite does not describe StreamSpecification back")
	c := newClient(t)
	name := createTable(t, c, tableSpec{Hash: "pk:S", Stream: types.StreamViewTypeNewAndOldImages})
	d := describe(t, c, name)
	ss := d.StreamSpecification
	if ss == nil || !aws.ToBool(ss.StreamEnabled) || ss.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Fatalf("StreamSpecification = %+v, want enabled NEW_AND_OLD_IMAGES", ss)
	}
	if !strings.HasPrefix(aws.ToString(d.LatestStreamArn), aws.ToString(d.TableArn)+"/stream/") {
		t.Errorf("LatestStreamArn = %q", aws.ToString(d.LatestStreamArn))
	}
	if aws.ToString(d.LatestStreamLabel) == "" {
		t.Errorf("LatestStreamLabel is empty")
	}
	// A table without a stream describes none.
	plain := createTable(t, c, tableSpec{Hash: "pk:S"})
	if d := describe(t, c, plain); d.LatestStreamArn != nil || (d.StreamSpecification != nil && aws.ToBool(d.StreamSpecification.StreamEnabled)) {
		t.Errorf("table without stream: StreamSpecification=%+v LatestStreamArn=%v", d.StreamSpecification, aws.ToString(d.LatestStreamArn))
	}
}

func TestSDKListTablesPagination(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	prefix := uniqueName(t) + "-"
	var mine []string
	for i := range 5 {
		mine = append(mine, createTable(t, c, tableSpec{Name: fmt.Sprintf("%s%02d", prefix, i), Hash: "pk:S"}))
	}
	// Page through the names after prefix (which sorts just before ours);
	// other tests may create tables concurrently, so only ours are checked.
	var seen []string
	start := prefix
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("ListTables does not terminate")
		}
		out, err := c.ListTables(tctx(t), &dynamodb.ListTablesInput{Limit: aws.Int32(2), ExclusiveStartTableName: aws.String(start)})
		requireNoError(t, err, "ListTables")
		if len(out.TableNames) > 2 {
			t.Fatalf("page of %d names with Limit 2", len(out.TableNames))
		}
		if !sort.StringsAreSorted(out.TableNames) {
			t.Errorf("page not sorted: %v", out.TableNames)
		}
		done := false
		for _, n := range out.TableNames {
			if n <= start {
				t.Errorf("name %q not after ExclusiveStartTableName %q", n, start)
			}
			if !strings.HasPrefix(n, prefix) {
				done = true
				break
			}
			seen = append(seen, n)
		}
		if done || out.LastEvaluatedTableName == nil {
			break
		}
		if len(out.TableNames) == 0 {
			t.Fatal("empty page with a LastEvaluatedTableName")
		}
		if last := aws.ToString(out.LastEvaluatedTableName); last != out.TableNames[len(out.TableNames)-1] {
			t.Errorf("LastEvaluatedTableName = %q, want the page's last name %q", last, out.TableNames[len(out.TableNames)-1])
		}
		start = aws.ToString(out.LastEvaluatedTableName)
	}
	if !slices.Equal(seen, mine) {
		t.Errorf("paged names = %v, want %v", seen, mine)
	}
	// Without a start name the whole list contains ours.
	all := map[string]bool{}
	p := dynamodb.NewListTablesPaginator(c, &dynamodb.ListTablesInput{Limit: aws.Int32(100)})
	for p.HasMorePages() {
		out, err := p.NextPage(tctx(t))
		requireNoError(t, err, "ListTables")
		for _, n := range out.TableNames {
			all[n] = true
		}
	}
	for _, n := range mine {
		if !all[n] {
			t.Errorf("ListTables without start misses %s", n)
		}
	}
	for _, lim := range []int32{0, 101} {
		_, err := c.ListTables(tctx(t), &dynamodb.ListTablesInput{Limit: aws.Int32(lim)})
		requireAPIError(t, err, "ValidationException", "limit")
	}
}

func TestSDKDeleteTable(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	name := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{{Name: "gsi", Hash: "g:S"}}})
	putItems(t, c, name, attrs{"pk": avS("a"), "g": avS("x")})
	out, err := c.DeleteTable(tctx(t), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	requireNoError(t, err, "DeleteTable")
	if out.TableDescription == nil || aws.ToString(out.TableDescription.TableName) != name {
		t.Fatalf("DeleteTable description = %+v", out.TableDescription)
	}
	// The table may linger in DELETING for a while (it does in DynamoDB).
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	requireAPIError(t, err, "ResourceNotFoundException", "")
	_, err = c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(name), Key: attrs{"pk": avS("a")}})
	requireAPIError(t, err, "ResourceNotFoundException", "")
	_, err = c.DeleteTable(tctx(t), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	requireAPIError(t, err, "ResourceNotFoundException", "")
	// The name can be reused, and the new table is empty.
	createTable(t, c, tableSpec{Name: name, Hash: "pk:S"})
	if it := getItem(t, c, name, attrs{"pk": avS("a")}); it != nil {
		t.Errorf("recreated table holds old item %s", renderItem(it))
	}
}

func TestSDKCreateTableDuplicate(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	spec := tableSpec{Hash: "pk:S"}
	spec.Name = createTable(t, c, spec)
	_, err := c.CreateTable(tctx(t), spec.input())
	requireAPIError(t, err, "ResourceInUseException", "")
}

func queryAll(t *testing.T, c *dynamodb.Client, in *dynamodb.QueryInput) []attrs {
	t.Helper()
	var items []attrs
	in.ExclusiveStartKey = nil
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("Query paging does not terminate")
		}
		out, err := c.Query(tctx(t), in)
		requireNoError(t, err, "Query")
		items = append(items, out.Items...)
		if out.LastEvaluatedKey == nil {
			return items
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func TestSDKUpdateTableGSI(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "dynalite 4.0.0 accepts GlobalSecondaryIndexUpdates Create/Delete but ignores them")
	t.Run("on-demand", func(t *testing.T) {
		t.Parallel()
		testUpdateTableGSI(t, false)
	})
	t.Run("provisioned", func(t *testing.T) {
		t.Parallel()
		testUpdateTableGSI(t, true)
	})
	t.Run("undefined key attribute", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		name := createTable(t, c, tableSpec{Hash: "pk:S"})
		var pt *types.ProvisionedThroughput
		_, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName:             aws.String("new"),
				KeySchema:             specKeySchema("g:S", "v:N"),
				Projection:            &types.Projection{ProjectionType: types.ProjectionTypeAll},
				ProvisionedThroughput: pt,
			}}},
		})
		// v is not in AttributeDefinitions.
		requireAPIError(t, err, "ValidationException", "AttributeDefinitions")

	})
}

func testUpdateTableGSI(t *testing.T, prov bool) {
	c := newClient(t)
	name := createTable(t, c, tableSpec{Hash: "pk:S", Provisioned: prov, GSIs: []indexSpec{{Name: "old", Hash: "o:S", Projection: types.ProjectionTypeKeysOnly}}})
	var pt *types.ProvisionedThroughput
	if prov {
		pt = provisioned5
	}
	var items []attrs
	for i := range 30 {
		it := attrs{"pk": avS(fmt.Sprintf("p%02d", i)), "o": avS("x"), "v": avN(fmt.Sprint(i))}
		if i%3 != 0 {
			it["g"] = avS(fmt.Sprintf("g%d", i%2)) // 20 items carry the new index key
		}
		items = append(items, it)
	}
	batchPut(t, c, name, items)

	out, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("v"), AttributeType: types.ScalarAttributeTypeN},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName:             aws.String("new"),
			KeySchema:             specKeySchema("g:S", "v:N"),
			Projection:            &types.Projection{ProjectionType: types.ProjectionTypeAll},
			ProvisionedThroughput: pt,
		}}},
	})
	requireNoError(t, err, "UpdateTable create GSI")
	found := false
	for _, g := range out.TableDescription.GlobalSecondaryIndexes {
		found = found || aws.ToString(g.IndexName) == "new"
	}
	if !found {
		t.Errorf("UpdateTable's description lacks the new index")
	}
	// The index backfills in the background (the embedded store too).
	waitActive(t, c, name)
	got := queryAll(t, c, &dynamodb.QueryInput{
		TableName: aws.String(name), IndexName: aws.String("new"),
		KeyConditionExpression:    aws.String("g = :g"),
		ExpressionAttributeValues: eaValues(":g", avS("g1")),
	})
	var want []string
	for _, it := range items {
		if sAttr(it, "g") == "g1" {
			want = append(want, nAttr(it, "v"))
		}
	}
	var gotV []string
	for _, it := range got {
		gotV = append(gotV, nAttr(it, "v"))
		if sAttr(it, "o") != "x" {
			t.Errorf("backfilled ALL projection lacks attribute o: %s", renderItem(it))
		}
	}
	sort.Slice(want, func(i, j int) bool { return atoi(want[i]) < atoi(want[j]) })
	if !slices.Equal(gotV, want) {
		t.Errorf("new index query = %v, want %v (sorted by v)", gotV, want)
	}
	d := describe(t, c, name)
	for _, g := range d.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "new" && aws.ToInt64(g.ItemCount) != 20 && !isExternal() {
			t.Errorf("new index ItemCount = %d, want 20", aws.ToInt64(g.ItemCount))
		}
	}
	// Writes after the backfill maintain the index.
	putItems(t, c, name, attrs{"pk": avS("late"), "g": avS("g1"), "v": avN("-1")})
	got = queryAll(t, c, &dynamodb.QueryInput{
		TableName: aws.String(name), IndexName: aws.String("new"),
		KeyConditionExpression:    aws.String("g = :g AND v < :z"),
		ExpressionAttributeValues: eaValues(":g", avS("g1"), ":z", avN("0")),
	})
	if len(got) != 1 || sAttr(got[0], "pk") != "late" {
		t.Errorf("query after a new write = %v", got)
	}

	// Duplicate index name.
	_, err = c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("new"), KeySchema: specKeySchema("g:S", ""), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			ProvisionedThroughput: pt,
		}}},
	})
	if err == nil {
		t.Errorf("creating a second index named %q succeeded", "new")
	}

	// Delete the old index.
	_, err = c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{
		TableName:                   aws.String(name),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("old")}}},
	})
	requireNoError(t, err, "UpdateTable delete GSI")
	deadline := time.Now().Add(10 * time.Second)
	for {
		d = describe(t, c, name)
		var gsis []string
		for _, g := range d.GlobalSecondaryIndexes {
			gsis = append(gsis, aws.ToString(g.IndexName))
		}
		if !slices.Contains(gsis, "old") {
			if !slices.Contains(gsis, "new") {
				t.Errorf("index new vanished with old: %v", gsis)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted index still described: %v", gsis)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = c.Query(tctx(t), &dynamodb.QueryInput{
		TableName: aws.String(name), IndexName: aws.String("old"),
		KeyConditionExpression:    aws.String("o = :o"),
		ExpressionAttributeValues: eaValues(":o", avS("x")),
	})
	requireAPIError(t, err, "ValidationException", "index")
	// Deleting an unknown index fails.
	_, err = c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{
		TableName:                   aws.String(name),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("nope")}}},
	})
	requireAPIError(t, err, "ResourceNotFoundException", "")
}

func atoi(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

func TestSDKCreateTableValidation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	base := func() *dynamodb.CreateTableInput {
		return tableSpec{Name: uniqueName(t), Hash: "pk:S", Range: "sk:N"}.input()
	}
	def := func(n string, typ types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: typ}
	}
	lsi := func(name, hash, rng string) types.LocalSecondaryIndex {
		return types.LocalSecondaryIndex{IndexName: aws.String(name), KeySchema: specKeySchema(hash, rng), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}
	}
	gsi := func(name, hash string, p types.ProjectionType, nonKey ...string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: specKeySchema(hash, ""), Projection: &types.Projection{ProjectionType: p, NonKeyAttributes: nonKey}}
	}
	cases := []struct {
		name   string
		mutate func(in *dynamodb.CreateTableInput)
		msg    string
	}{
		{"no attribute definitions", func(in *dynamodb.CreateTableInput) { in.AttributeDefinitions = nil }, ""},
		{"empty attribute definitions", func(in *dynamodb.CreateTableInput) { in.AttributeDefinitions = []types.AttributeDefinition{} }, ""},
		{"key attribute not defined", func(in *dynamodb.CreateTableInput) {
			in.AttributeDefinitions = []types.AttributeDefinition{def("pk", "S")}
		}, "definition"},
		{"unused attribute definition", func(in *dynamodb.CreateTableInput) {
			in.AttributeDefinitions = append(in.AttributeDefinitions, def("extra", "S"))
		}, "AttributeDefinitions"},
		{"key attribute type BOOL", func(in *dynamodb.CreateTableInput) {
			in.AttributeDefinitions[0].AttributeType = "BOOL"
		}, ""},
		{"no key schema", func(in *dynamodb.CreateTableInput) { in.KeySchema = nil }, ""},
		{"range key first", func(in *dynamodb.CreateTableInput) {
			in.KeySchema[0], in.KeySchema[1] = in.KeySchema[1], in.KeySchema[0]
		}, ""},
		{"two hash keys", func(in *dynamodb.CreateTableInput) { in.KeySchema[1].KeyType = types.KeyTypeHash }, ""},
		{"three key elements", func(in *dynamodb.CreateTableInput) {
			in.KeySchema = append(in.KeySchema, in.KeySchema[1])
		}, ""},
		{"LSI on a hash-only table", func(in *dynamodb.CreateTableInput) {
			in.KeySchema = in.KeySchema[:1]
			in.AttributeDefinitions = []types.AttributeDefinition{def("pk", "S"), def("l", "S")}
			in.LocalSecondaryIndexes = []types.LocalSecondaryIndex{lsi("lsi", "pk:S", "l:S")}
		}, "range key"},
		{"LSI without range key", func(in *dynamodb.CreateTableInput) {
			in.LocalSecondaryIndexes = []types.LocalSecondaryIndex{lsi("lsi", "pk:S", "")}
		}, ""},
		{"LSI with another hash key", func(in *dynamodb.CreateTableInput) {
			in.AttributeDefinitions = append(in.AttributeDefinitions, def("h", "S"), def("l", "S"))
			in.LocalSecondaryIndexes = []types.LocalSecondaryIndex{lsi("lsi", "h:S", "l:S")}
		}, ""},
		{"duplicate index names", func(in *dynamodb.CreateTableInput) {
			in.AttributeDefinitions = append(in.AttributeDefinitions, def("g", "S"))
			in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{gsi("idx", "g:S", "ALL"), gsi("idx", "g:S", "KEYS_ONLY")}
		}, "Duplicate"},
		{"GSI key not defined", func(in *dynamodb.CreateTableInput) {
			in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{gsi("idx", "g:S", "ALL")}
		}, ""},
		{"KEYS_ONLY with NonKeyAttributes", func(in *dynamodb.CreateTableInput) {
			in.AttributeDefinitions = append(in.AttributeDefinitions, def("g", "S"))
			in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{gsi("idx", "g:S", "KEYS_ONLY", "a")}
		}, ""},
		{"provisioned without throughput", func(in *dynamodb.CreateTableInput) {
			in.BillingMode = types.BillingModeProvisioned
		}, ""},
		{"pay per request with throughput", func(in *dynamodb.CreateTableInput) {
			in.ProvisionedThroughput = provisioned5
		}, ""},
		{"table name too short", func(in *dynamodb.CreateTableInput) { in.TableName = aws.String("ab") }, "3"},
		{"table name bad character", func(in *dynamodb.CreateTableInput) { in.TableName = aws.String("a b c") }, ""},
		{"table name too long", func(in *dynamodb.CreateTableInput) { in.TableName = aws.String(strings.Repeat("x", 256)) }, "255"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := base()
			tc.mutate(in)
			_, err := c.CreateTable(tctx(t), in)
			if err == nil {
				dropTable(c, aws.ToString(in.TableName))
			}
			requireAPIError(t, err, "ValidationException", tc.msg)
		})
	}
}

// TestSDKUpdateTableGSIErrors: DynamoDB creates or deletes one GSI per
// UpdateTable (API Reference, UpdateTable, GlobalSecondaryIndexUpdates: "You
// can create or delete only one global secondary index per UpdateTable
// operation").
func TestSDKUpdateTableGSIErrors(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "dynalite 4.0.0 accepts GlobalSecondaryIndexUpdates Create/Delete but ignores them")
	c := newClient(t)
	defs := []types.AttributeDefinition{{AttributeName: aws.String("h"), AttributeType: types.ScalarAttributeTypeS}}
	create := func(index string) types.GlobalSecondaryIndexUpdate {
		return types.GlobalSecondaryIndexUpdate{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String(index), KeySchema: specKeySchema("h:S", ""), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}
	}
	del := func(index string) types.GlobalSecondaryIndexUpdate {
		return types.GlobalSecondaryIndexUpdate{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String(index)}}
	}
	cases := []struct {
		name    string
		updates []types.GlobalSecondaryIndexUpdate
		// alsoOK is one more acceptable error code.
		alsoOK string
	}{
		{"create and delete the same index", []types.GlobalSecondaryIndexUpdate{create("new"), del("new")}, ""},
		{"two creates", []types.GlobalSecondaryIndexUpdate{create("new1"), create("new2")}, ""},
		{"create and delete another", []types.GlobalSecondaryIndexUpdate{create("new3"), del("gsi")}, ""},
		{"delete twice", []types.GlobalSecondaryIndexUpdate{del("gsi"), del("gsi")}, "ResourceNotFoundException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{{Name: "gsi", Hash: "g:S"}}})
			putItems(t, c, name, attrs{"pk": avS("a"), "g": avS("x"), "h": avS("y")})
			_, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{TableName: aws.String(name), AttributeDefinitions: defs, GlobalSecondaryIndexUpdates: tc.updates})
			if err == nil {
				t.Errorf("UpdateTable with %d GSI updates succeeded", len(tc.updates))
			} else if code := apiErrorCode(err); code != "ValidationException" && code != "LimitExceededException" && code != tc.alsoOK {
				t.Errorf("UpdateTable: %v; want ValidationException or LimitExceededException", err)
			}
			d := describe(t, c, name)
			var gsis []string
			for _, g := range d.GlobalSecondaryIndexes {
				gsis = append(gsis, aws.ToString(g.IndexName))
			}
			if !slices.Equal(gsis, []string{"gsi"}) {
				t.Errorf("after a rejected UpdateTable the GSIs are %v, want [gsi]", gsis)
			}
			if it := getItem(t, c, name, attrs{"pk": avS("a")}); sAttr(it, "g") != "x" {
				t.Errorf("item after a rejected UpdateTable: %s", renderItem(it))
			}
		})
	}
}

// TestSDKCreateTableNullsAndTags checks CreateTable's messages for a missing
// AttributeName, a key schema naming one attribute twice, and bad Tags,
// and that a rejected request creates nothing.
func TestSDKCreateTableNullsAndTags(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	defs := func(names ...string) []types.AttributeDefinition {
		var d []types.AttributeDefinition
		for _, n := range names {
			d = append(d, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS})
		}
		return d
	}
	ks := func(hash, rng string) []types.KeySchemaElement {
		k := []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}}
		if rng != "" {
			k = append(k, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
		}
		return k
	}
	manyTags := func(n int) []types.Tag {
		var tags []types.Tag
		for i := 0; i < n; i++ {
			tags = append(tags, types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")})
		}
		return tags
	}
	const sameName = "Both the Hash Key and the Range Key element in the KeySchema have the same name"
	cases := []struct {
		name string
		in   dynamodb.CreateTableInput
		msg  string
	}{
		// For the table's own key schema, DynamoDB reports the missing
		// definition first (recorded by the conformance suite).
		{"table HASH and RANGE the same", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", "pk")}, "Invalid KeySchema: Some index key attribute have no definition"},
		{"GSI HASH and RANGE the same", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk", "g"), KeySchema: ks("pk", ""),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks("g", "g"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}, sameName},
		{"LSI HASH and RANGE the same", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk", "sk"), KeySchema: ks("pk", "sk"),
			LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("lsi"), KeySchema: ks("pk", "pk"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}, sameName},
		{"51 tags", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: manyTags(51)},
			"One or more parameter values were invalid: The number of tags exceeds the limit of 50"},
		{"tag key too long", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: []types.Tag{{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("v")}}},
			"at 'tags.1.member.key' failed to satisfy constraint: Member must have length less than or equal to 128"},
		{"tag value too long", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String(strings.Repeat("v", 257))}}},
			"at 'tags.1.member.value' failed to satisfy constraint: Member must have length less than or equal to 256"},
		{"tag with a forbidden character", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("a*b")}}},
			"Tag keys and values may only contain"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			name := fmt.Sprintf("%s-%d", uniqueName(t), i)
			in.TableName = aws.String(name)
			in.BillingMode = types.BillingModePayPerRequest
			_, err := c.CreateTable(tctx(t), &in)
			if !strings.HasPrefix(tc.msg, "at ") && !strings.HasPrefix(tc.msg, "Tag keys") {
				requireAPIErrorExact(t, err, "ValidationException", tc.msg)
			} else {
				requireAPIError(t, err, "ValidationException", tc.msg)
			}
			_, err = c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			requireAPIError(t, err, "ResourceNotFoundException", "")
		})
	}
	// 50 valid tags are accepted.
	name := uniqueName(t) + "-50"
	_, err := c.CreateTable(tctx(t), &dynamodb.CreateTableInput{TableName: aws.String(name), AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""),
		BillingMode: types.BillingModePayPerRequest, Tags: manyTags(50)})
	requireNoError(t, err, "CreateTable with 50 tags")
	t.Cleanup(func() { dropTable(c, name) })
}

// TestSDKDeleteTableDescription checks the members of DeleteTable's
// TableDescription on the wire: those DynamoDB returns for a table being
// deleted, and no others.
func TestSDKDeleteTableDescription(t *testing.T) {
	t.Parallel()
	_, url := newWireServer(t)
	cases := []struct {
		name, body string
		want       []string
	}{
		{"provisioned", `{"TableName":"%s","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":5}}`,
			[]string{"ItemCount", "ProvisionedThroughput", "TableArn", "TableId", "TableName", "TableSizeBytes", "TableStatus"}},
		{"on demand with a stream", `{"TableName":"%s","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST","StreamSpecification":{"StreamEnabled":true,"StreamViewType":"KEYS_ONLY"}}`,
			[]string{"BillingModeSummary", "ItemCount", "LatestStreamArn", "LatestStreamLabel", "ProvisionedThroughput", "StreamSpecification", "TableArn", "TableId", "TableName", "TableSizeBytes", "TableStatus"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("deleting-%d", i)
			if r := wirePost(t, url, "DynamoDB_20120810.CreateTable", fmt.Sprintf(tc.body, name)); r.status != http.StatusOK {
				t.Fatalf("CreateTable: %d %s", r.status, r.raw)
			}
			wirePost(t, url, "DynamoDB_20120810.PutItem", fmt.Sprintf(`{"TableName":"%s","Item":{"pk":{"S":"a"}}}`, name))
			r := wirePost(t, url, "DynamoDB_20120810.DeleteTable", fmt.Sprintf(`{"TableName":"%s"}`, name))
			if r.status != http.StatusOK {
				t.Fatalf("DeleteTable: %d %s", r.status, r.raw)
			}
			d, _ := r.body["TableDescription"].(map[string]any)
			var got []string
			for k := range d {
				got = append(got, k)
			}
			if g, w := sortedQuoted(got), sortedQuoted(tc.want); g != w {
				t.Fatalf("members %s, want %s", g, w)
			}
			if d["TableStatus"] != "DELETING" || d["TableName"] != name || d["ItemCount"] != float64(1) {
				t.Fatalf("description %s", r.raw)
			}
		})
	}
}
