// Package explorer is the console's store explorer, for operators: the
// tables of the DynamoDB store, Scan and Query, items as DynamoDB JSON and
// plain JSON, item and table writes.
package explorer

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/console"
)

//go:embed templates/*.html
var templates embed.FS

// Area is the store explorer over one DynamoDB client.
type Area struct {
	db *dynamodb.Client
	k  *console.Kit
}

// New returns the store explorer of db.
func New(db *dynamodb.Client) *Area { return &Area{db: db} }

// Name implements console.Area.
func (*Area) Name() string { return "explorer" }

// Nav links operators to the explorer.
func (*Area) Nav(_ *http.Request, s console.Session) template.HTML {
	if !s.Operator {
		return ""
	}
	return `<a href="/console/explorer/">Store explorer</a>`
}

// Card is the explorer's card on an operator's home page.
func (*Area) Card(s console.Session) template.HTML {
	if !s.Operator {
		return ""
	}
	return `<li class="card"><a href="/console/explorer/"><strong>Store explorer</strong></a><p>Tables, indexes, Scan and Query, items.</p></li>`
}

// Mount implements console.Area.
func (a *Area) Mount(m *http.ServeMux, k *console.Kit) error {
	a.k = k
	if err := k.Pages(templates, nil); err != nil {
		return err
	}
	m.HandleFunc("GET /console/explorer/{$}", a.tables)
	m.HandleFunc("POST /console/explorer/{$}", a.createTable)
	m.HandleFunc("GET /console/explorer/t/{table}", a.table)
	m.HandleFunc("POST /console/explorer/t/{table}/delete", a.deleteTable)
	m.HandleFunc("GET /console/explorer/t/{table}/item", a.itemForm)
	m.HandleFunc("POST /console/explorer/t/{table}/item", a.putItem)
	m.HandleFunc("POST /console/explorer/t/{table}/item/delete", a.deleteItem)
	return nil
}

// keyAttr is one attribute of a key schema.
type keyAttr struct {
	Name string
	Type string // S, N or B
}

// index is a table's or an index's key schema.
type index struct {
	Name       string // "" for the table
	Kind       string // table, GSI, LSI
	PK, SK     keyAttr
	Projection string
}

// tableInfo is what the explorer shows of a table.
type tableInfo struct {
	Name      string
	Status    string
	Items     int64
	Bytes     int64
	Indexes   []index // the table's own key first
	Stream    string
	TTL       string
	PITR      string
	Billing   string
	DescError string
}

// KeyNames returns the table's key attribute names.
func (t tableInfo) KeyNames() []string {
	k := t.Indexes[0]
	if k.SK.Name != "" {
		return []string{k.PK.Name, k.SK.Name}
	}
	return []string{k.PK.Name}
}

// index returns the named index ("" the table).
func (t tableInfo) index(name string) (index, bool) {
	for _, ix := range t.Indexes {
		if ix.Name == name {
			return ix, true
		}
	}
	return index{}, false
}

func (a *Area) describe(ctx context.Context, name string, extras bool) (tableInfo, error) {
	out, err := a.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return tableInfo{}, err
	}
	d := out.Table
	ti := tableInfo{Name: name, Status: string(d.TableStatus), Items: aws.ToInt64(d.ItemCount), Bytes: aws.ToInt64(d.TableSizeBytes), Stream: "off", Billing: "provisioned"}
	if d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode != "" {
		ti.Billing = string(d.BillingModeSummary.BillingMode)
	}
	types_ := map[string]string{}
	for _, a := range d.AttributeDefinitions {
		types_[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	schema := func(ks []types.KeySchemaElement) (pk, sk keyAttr) {
		for _, k := range ks {
			a := keyAttr{Name: aws.ToString(k.AttributeName), Type: types_[aws.ToString(k.AttributeName)]}
			if k.KeyType == types.KeyTypeHash {
				pk = a
			} else {
				sk = a
			}
		}
		return pk, sk
	}
	pk, sk := schema(d.KeySchema)
	ti.Indexes = append(ti.Indexes, index{Kind: "table", PK: pk, SK: sk})
	proj := func(p *types.Projection) string {
		if p == nil {
			return ""
		}
		s := string(p.ProjectionType)
		if len(p.NonKeyAttributes) > 0 {
			s += " (" + strings.Join(p.NonKeyAttributes, ", ") + ")"
		}
		return s
	}
	for _, g := range d.GlobalSecondaryIndexes {
		pk, sk := schema(g.KeySchema)
		ti.Indexes = append(ti.Indexes, index{Name: aws.ToString(g.IndexName), Kind: "GSI", PK: pk, SK: sk, Projection: proj(g.Projection)})
	}
	for _, l := range d.LocalSecondaryIndexes {
		pk, sk := schema(l.KeySchema)
		ti.Indexes = append(ti.Indexes, index{Name: aws.ToString(l.IndexName), Kind: "LSI", PK: pk, SK: sk, Projection: proj(l.Projection)})
	}
	if s := d.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		ti.Stream = string(s.StreamViewType)
	}
	if !extras {
		return ti, nil
	}
	ti.TTL, ti.PITR = "unknown", "unknown"
	if t, err := a.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)}); err == nil && t.TimeToLiveDescription != nil {
		ti.TTL = strings.ToLower(string(t.TimeToLiveDescription.TimeToLiveStatus))
		if a := aws.ToString(t.TimeToLiveDescription.AttributeName); a != "" {
			ti.TTL += " (" + a + ")"
		}
	}
	if b, err := a.db.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(name)}); err == nil &&
		b.ContinuousBackupsDescription != nil && b.ContinuousBackupsDescription.PointInTimeRecoveryDescription != nil {
		ti.PITR = strings.ToLower(string(b.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus))
	}
	return ti, nil
}

type tablesData struct {
	Tables []tableInfo
	Form   url.Values
	Error  string
	Msg    string
}

func (a *Area) tables(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	a.tablesPage(w, r, http.StatusOK, tablesData{Form: url.Values{"pktype": {"S"}, "sktype": {"S"}}, Msg: message(r)})
}

func (a *Area) tablesPage(w http.ResponseWriter, r *http.Request, status int, d tablesData) {
	var names []string
	p := dynamodb.NewListTablesPaginator(a.db, &dynamodb.ListTablesInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(r.Context())
		if err != nil {
			a.k.Failure(w, r, err)
			return
		}
		names = append(names, out.TableNames...)
	}
	for _, n := range names {
		ti, err := a.describe(r.Context(), n, true)
		if err != nil {
			ti = tableInfo{Name: n, DescError: console.StoreMessage(err), Indexes: []index{{}}}
		}
		d.Tables = append(d.Tables, ti)
	}
	a.k.Render(w, r, status, "tables", d)
}

// message is the confirmation named by a redirect's msg parameter.
func message(r *http.Request) string {
	return map[string]string{
		"created": "Table created.", "deleted": "Table deleted.", "saved": "Item saved.", "itemdeleted": "Item deleted.",
	}[r.URL.Query().Get("msg")]
}

func (a *Area) createTable(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	add := func(attr, typ string, kt types.KeyType) {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(attr), AttributeType: types.ScalarAttributeType(typ)})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(attr), KeyType: kt})
	}
	add(strings.TrimSpace(f.Get("pk")), f.Get("pktype"), types.KeyTypeHash)
	if sk := strings.TrimSpace(f.Get("sk")); sk != "" {
		add(sk, f.Get("sktype"), types.KeyTypeRange)
	}
	if _, err := a.db.CreateTable(r.Context(), in); err != nil {
		a.tablesPage(w, r, http.StatusBadRequest, tablesData{Form: f, Error: console.StoreMessage(err)})
		return
	}
	http.Redirect(w, r, "/console/explorer/t/"+url.PathEscape(name)+"?msg=created", http.StatusSeeOther)
}

func (a *Area) deleteTable(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	name := r.PathValue("table")
	if r.PostForm.Get("confirm") != "yes" {
		a.k.Confirm(w, r, console.Confirm{Title: "Delete table " + name + "?",
			Message: "The table " + name + " and every item in it will be deleted. This cannot be undone.",
			Action:  r.URL.Path, Back: "/console/explorer/t/" + url.PathEscape(name)})
		return
	}
	if _, err := a.db.DeleteTable(r.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/explorer/?msg=deleted", http.StatusSeeOther)
}

// shownItem is an item as the table page lists it.
type shownItem struct {
	Key   []string // "name = value" of the key attributes
	Plain string
	DDB   string
	Ref   string // encodeKey of its key
}

type tableData struct {
	T       tableInfo
	Q       url.Values
	Op      string
	Index   index
	Items   []shownItem
	Scanned int32
	Next    template.URL // the next page's "?query" (its cursor in start)
	Error   string
	Msg     string
	Ops     []string
}

// sortOps are the sort key conditions the query form offers.
var sortOps = []string{"=", "<", "<=", ">", ">=", "begins_with", "between"}

func (a *Area) table(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	ti, err := a.describe(r.Context(), r.PathValue("table"), true)
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			a.k.NotFound(w, r)
			return
		}
		a.k.Failure(w, r, err)
		return
	}
	q := r.URL.Query()
	d := tableData{T: ti, Q: q, Op: q.Get("op"), Msg: message(r), Ops: sortOps}
	if d.Op != "query" {
		d.Op = "scan"
	}
	ix, ok := ti.index(q.Get("index"))
	if !ok {
		d.Error = fmt.Sprintf("The table has no index %q.", q.Get("index"))
		ix = ti.Indexes[0]
	}
	d.Index = ix
	if d.Error == "" {
		if err := a.runQuery(r.Context(), &d); err != nil {
			d.Error = err.Error()
		}
	}
	status := http.StatusOK
	if d.Error != "" {
		status = http.StatusBadRequest
	}
	a.k.Render(w, r, status, "table", d)
}

// runQuery runs the Scan or Query the form describes and fills d.Items.
func (a *Area) runQuery(ctx context.Context, d *tableData) error {
	q := d.Q
	limit := int32(25)
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n <= 500 {
		limit = int32(n)
	}
	var start Item
	if s := q.Get("start"); s != "" {
		k, err := decodeKey(s)
		if err != nil {
			return err
		}
		start = k
	}
	var tableName = aws.String(d.T.Name)
	var indexName *string
	if d.Index.Name != "" {
		indexName = aws.String(d.Index.Name)
	}
	names := map[string]string{}
	values := Item{}
	if v := strings.TrimSpace(q.Get("values")); v != "" {
		vals, err := parseDDBItem(v)
		if err != nil {
			return fmt.Errorf("filter values: %w", err)
		}
		values = vals
	}
	filter := strings.TrimSpace(q.Get("filter"))
	if filter != "" {
		// #name placeholders the expression uses name themselves.
		for _, f := range strings.FieldsFunc(filter, func(r rune) bool { return !(r == '#' || r == '_' || r == '-' || r == '.' || isAlnum(r)) }) {
			if strings.HasPrefix(f, "#") && len(f) > 1 {
				names[f] = strings.TrimPrefix(f, "#")
			}
		}
	}
	var items []Item
	var last Item
	var scanned int32
	if d.Op == "scan" {
		in := &dynamodb.ScanInput{TableName: tableName, IndexName: indexName, Limit: aws.Int32(limit), ExclusiveStartKey: start}
		if filter != "" {
			in.FilterExpression = aws.String(filter)
		}
		if len(names) > 0 {
			in.ExpressionAttributeNames = names
		}
		if len(values) > 0 {
			in.ExpressionAttributeValues = values
		}
		out, err := a.db.Scan(ctx, in)
		if err != nil {
			return errors.New(console.StoreMessage(err))
		}
		items, last, scanned = out.Items, out.LastEvaluatedKey, out.ScannedCount
	} else {
		ix := d.Index
		pv, err := scalar(ix.PK.Type, q.Get("pk"))
		if err != nil {
			return fmt.Errorf("%s: %w", ix.PK.Name, err)
		}
		names["#qpk"] = ix.PK.Name
		values[":qpk"] = pv
		cond := "#qpk = :qpk"
		if op := q.Get("skop"); op != "" && ix.SK.Name != "" && (q.Get("sk") != "" || op == "between") {
			if !slices.Contains(sortOps, op) {
				return fmt.Errorf("unknown sort key condition %q", op)
			}
			sv, err := scalar(ix.SK.Type, q.Get("sk"))
			if err != nil {
				return fmt.Errorf("%s: %w", ix.SK.Name, err)
			}
			names["#qsk"] = ix.SK.Name
			values[":qsk"] = sv
			switch op {
			case "begins_with":
				cond += " AND begins_with(#qsk, :qsk)"
			case "between":
				sv2, err := scalar(ix.SK.Type, q.Get("sk2"))
				if err != nil {
					return fmt.Errorf("%s: %w", ix.SK.Name, err)
				}
				values[":qsk2"] = sv2
				cond += " AND #qsk BETWEEN :qsk AND :qsk2"
			default:
				cond += " AND #qsk " + op + " :qsk"
			}
		}
		in := &dynamodb.QueryInput{TableName: tableName, IndexName: indexName, Limit: aws.Int32(limit), ExclusiveStartKey: start,
			KeyConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ScanIndexForward: aws.Bool(q.Get("order") != "desc")}
		if filter != "" {
			in.FilterExpression = aws.String(filter)
		}
		out, err := a.db.Query(ctx, in)
		if err != nil {
			return errors.New(console.StoreMessage(err))
		}
		items, last, scanned = out.Items, out.LastEvaluatedKey, out.ScannedCount
	}
	d.Scanned = scanned
	keys := d.T.KeyNames()
	for _, it := range items {
		k := Item{}
		var shown []string
		for _, n := range keys {
			if v, ok := it[n]; ok {
				k[n] = v
				shown = append(shown, n+" = "+scalarText(v))
			}
		}
		plain := map[string]any{}
		for n, v := range itemPlain(it) {
			plain[n] = v
		}
		d.Items = append(d.Items, shownItem{Key: shown, Plain: pretty(plain), DDB: pretty(itemDDBJSON(it)), Ref: encodeKey(k)})
	}
	if len(last) > 0 {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("start", encodeKey(last))
		next.Del("msg")
		d.Next = template.URL("?" + next.Encode())
	}
	return nil
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

type itemData struct {
	T      tableInfo
	Ref    string // the edited item's key; "" for a new item
	Text   string
	Format string // ddb or plain
	Error  string
	Msg    string
	Plain  string
}

func (a *Area) itemForm(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	ti, err := a.describe(r.Context(), r.PathValue("table"), false)
	if err != nil {
		a.notFoundOr(w, r, err)
		return
	}
	d := itemData{T: ti, Format: "ddb", Msg: message(r)}
	if ref := r.URL.Query().Get("key"); ref != "" {
		k, err := decodeKey(ref)
		if err != nil {
			a.k.NotFound(w, r)
			return
		}
		out, err := a.db.GetItem(r.Context(), &dynamodb.GetItemInput{TableName: aws.String(ti.Name), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			a.k.Failure(w, r, err)
			return
		}
		if out.Item == nil {
			a.k.NotFound(w, r)
			return
		}
		d.Ref, d.Text, d.Plain = ref, pretty(itemDDBJSON(out.Item)), pretty(itemPlain(out.Item))
	} else {
		skel := map[string]any{}
		for _, n := range ti.KeyNames() {
			t := ti.Indexes[0].PK.Type
			if n != ti.Indexes[0].PK.Name {
				t = ti.Indexes[0].SK.Type
			}
			skel[n] = map[string]string{t: ""}
		}
		d.Text = pretty(skel)
	}
	a.k.Render(w, r, http.StatusOK, "item", d)
}

func (a *Area) notFoundOr(w http.ResponseWriter, r *http.Request, err error) {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		a.k.NotFound(w, r)
		return
	}
	a.k.Failure(w, r, err)
}

func (a *Area) putItem(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	ti, err := a.describe(r.Context(), r.PathValue("table"), false)
	if err != nil {
		a.notFoundOr(w, r, err)
		return
	}
	f := r.PostForm
	d := itemData{T: ti, Ref: f.Get("ref"), Text: f.Get("item"), Format: f.Get("format")}
	var it Item
	if d.Format == "plain" {
		it, err = parsePlainItem(d.Text)
	} else {
		d.Format = "ddb"
		it, err = parseDDBItem(d.Text)
	}
	if err == nil {
		_, err = a.db.PutItem(r.Context(), &dynamodb.PutItemInput{TableName: aws.String(ti.Name), Item: it})
		if err != nil {
			err = errors.New(console.StoreMessage(err))
		}
	}
	if err != nil {
		d.Error = err.Error()
		a.k.Render(w, r, http.StatusBadRequest, "item", d)
		return
	}
	k := Item{}
	for _, n := range ti.KeyNames() {
		k[n] = it[n]
	}
	http.Redirect(w, r, "/console/explorer/t/"+url.PathEscape(ti.Name)+"/item?"+url.Values{"key": {encodeKey(k)}, "msg": {"saved"}}.Encode(), http.StatusSeeOther)
}

func (a *Area) deleteItem(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	name := r.PathValue("table")
	ref := r.PostForm.Get("key")
	k, err := decodeKey(ref)
	if err != nil {
		a.k.NotFound(w, r)
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		a.k.Confirm(w, r, console.Confirm{Title: "Delete this item?",
			Message: "The item " + compact(itemPlain(k)) + " will be deleted from " + name + ". This cannot be undone.",
			Action:  r.URL.Path, Fields: map[string]string{"key": ref},
			Back: "/console/explorer/t/" + url.PathEscape(name) + "/item?key=" + url.QueryEscape(ref)})
		return
	}
	if _, err := a.db.DeleteItem(r.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: k}); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/explorer/t/"+url.PathEscape(name)+"?msg=itemdeleted", http.StatusSeeOther)
}
