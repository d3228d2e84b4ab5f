// Package explorer is the console's store explorer, for operators: the
// tables of the DynamoDB store, Scan and Query, items as DynamoDB JSON and
// plain JSON, item and table writes.
package explorer

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
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
	// key signs the page cursors; a restart makes the old ones invalid.
	key     []byte
	flashes flashes
}

// New returns the store explorer of db.
func New(db *dynamodb.Client) *Area {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &Area{db: db, key: key}
}

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
	m.HandleFunc("GET /console/explorer/t/{table}/delete", a.confirmDeleteTable)
	m.HandleFunc("POST /console/explorer/t/{table}/delete", a.deleteTable)
	m.HandleFunc("GET /console/explorer/t/{table}/item", a.itemForm)
	m.HandleFunc("POST /console/explorer/t/{table}/item", a.putItem)
	m.HandleFunc("GET /console/explorer/t/{table}/item/delete", a.confirmDeleteItem)
	m.HandleFunc("POST /console/explorer/t/{table}/item/delete", a.deleteItem)
	m.HandleFunc("GET /console/explorer/t/{table}/delete-items", a.confirmDeleteItems)
	m.HandleFunc("POST /console/explorer/t/{table}/delete-items", a.deleteItems)
	m.HandleFunc("GET /console/explorer/t/{table}/export", a.export)
	m.HandleFunc("POST /console/explorer/t/{table}/gsi", a.addGSI)
	m.HandleFunc("GET /console/explorer/t/{table}/gsi/delete", a.confirmDeleteGSI)
	m.HandleFunc("POST /console/explorer/t/{table}/gsi/delete", a.deleteGSI)
	m.HandleFunc("POST /console/explorer/t/{table}/ttl", a.setTTL)
	m.HandleFunc("POST /console/explorer/t/{table}/stream", a.setStream)
	m.HandleFunc("GET /console/explorer/partiql", a.partiqlPage)
	m.HandleFunc("POST /console/explorer/partiql", a.partiqlRun)
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
	TTLAttr   string // the TTL attribute, when one is set
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
			ti.TTLAttr = a
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
	s, ok := a.k.Require(w, r, "operator")
	if !ok {
		return
	}
	d := tablesData{Form: url.Values{"pktype": {"S"}, "sktype": {"S"}}, Msg: message(r)}
	status := http.StatusOK
	if f, ok := a.flashes.get(a.k.Now(), s.Subject, r.URL.Query().Get("flash")); ok {
		d.Form, d.Error, status = f.Form, f.Error, http.StatusBadRequest
	}
	a.tablesPage(w, r, status, d)
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
	q := r.URL.Query()
	if q.Get("msg") == "itemsdeleted" {
		if n, err := strconv.Atoi(q.Get("n")); err == nil && n > 0 {
			return fmt.Sprintf("%d item%s deleted.", n, map[bool]string{true: "s"}[n != 1])
		}
	}
	return map[string]string{
		"created": "Table created.", "deleted": "Table deleted.", "saved": "Item saved.", "itemdeleted": "Item deleted.",
		"gsiadded": "Index added: the store builds it from the table's items.", "gsideleted": "Index deleted.",
		"ttlon": "TTL enabled.", "ttloff": "TTL disabled.", "stream": "Stream setting saved.", "ran": "Statement run.",
	}[q.Get("msg")]
}

func (a *Area) createTable(w http.ResponseWriter, r *http.Request) {
	s, ok := a.k.Require(w, r, "operator")
	if !ok {
		return
	}
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	refuse := func(msg string) {
		id := a.flashes.put(a.k.Now(), s.Subject, msg, f)
		http.Redirect(w, r, "/console/explorer/?"+url.Values{"flash": {id}}.Encode()+"#create-table", http.StatusSeeOther)
	}
	if name == "" || strings.TrimSpace(f.Get("pk")) == "" {
		refuse("A table needs a name and a partition key.")
		return
	}
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
		refuse(console.StoreMessage(err))
		return
	}
	http.Redirect(w, r, "/console/explorer/t/"+url.PathEscape(name)+"?msg=created", http.StatusSeeOther)
}

// confirmDeleteTable asks to confirm a table's deletion. It and the other
// confirmations are GET pages: Back after the deletion lands on one, never
// on the answer to a POST.
func (a *Area) confirmDeleteTable(w http.ResponseWriter, r *http.Request) {
	_, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	a.k.Confirm(w, r, console.Confirm{Title: "Delete table " + ti.Name + "?",
		Message: "The table " + ti.Name + " and every item in it will be deleted. This cannot be undone.",
		Action:  r.URL.Path, Back: tablePath(ti.Name)})
}

// confirmDeleteItem asks to confirm an item's deletion.
func (a *Area) confirmDeleteItem(w http.ResponseWriter, r *http.Request) {
	_, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	ref := r.URL.Query().Get("key")
	k, err := decodeKey(ref)
	if err != nil || !isKeyOf(ti, k) {
		a.k.NotFound(w, r)
		return
	}
	a.k.Confirm(w, r, console.Confirm{Title: "Delete this item?",
		Message: "The item " + compact(itemPlain(k)) + " will be deleted from " + ti.Name + ". This cannot be undone.",
		Action:  r.URL.Path, Fields: map[string]string{"key": ref},
		Back: tablePath(ti.Name) + "/item?" + url.Values{"key": {ref}}.Encode()})
}

func (a *Area) deleteTable(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	name := r.PathValue("table")
	if r.PostForm.Get("confirm") != "yes" {
		http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
		return
	}
	if _, err := a.db.DeleteTable(r.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/explorer/?msg=deleted", http.StatusSeeOther)
}

// shownItem is an item as the card view lists it.
type shownItem struct {
	Key   []string // "name = value" of the key attributes
	Plain string
	DDB   string
	Ref   string // encodeKey of its key
}

type tableData struct {
	T     tableInfo
	Q     url.Values
	Op    string
	Index index
	// View is grid (the default), plain or ddb (cards of plain or
	// DynamoDB JSON).
	View    string
	Grid    grid
	Items   []shownItem // the card views'
	Ran     bool        // the Scan or Query ran (its result is shown)
	Scanned int32
	Page    int // 1 for the first
	Limit   int32
	Sizes   []int
	// Next, Prev and First are "?query" links of the pages around; Self is
	// this page's, Views each view's of this page, Export the export's
	// query (format to add).
	Next, Prev, First, Self template.URL
	Views                   map[string]template.URL
	Export                  template.URL
	Error                   string
	Msg                     string
	Ops                     []string
	// Settings is a refused settings form: its message and fields.
	Settings    flash
	StreamViews []string
}

// sortOps are the sort key conditions the query form offers.
var sortOps = []string{"=", "<", "<=", ">", ">=", "begins_with", "between"}

// queryLink returns "?query" of q with set applied ("" deletes) and
// without the one-time parameters (msg, n, flash).
func queryLink(q url.Values, set ...string) template.URL {
	out := url.Values{}
	for k, v := range q {
		out[k] = v
	}
	out.Del("msg")
	out.Del("n")
	out.Del("flash")
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			out.Del(set[i])
		} else {
			out.Set(set[i], set[i+1])
		}
	}
	return template.URL("?" + out.Encode())
}

func (a *Area) table(w http.ResponseWriter, r *http.Request) {
	ss, ti, ok := a.operatorTable(w, r, true)
	if !ok {
		return
	}
	q := r.URL.Query()
	d := tableData{T: ti, Q: q, Op: q.Get("op"), Msg: message(r), Ops: sortOps, View: q.Get("view"), Limit: pageSize(q.Get("limit")), Sizes: pageSizes, Page: 1, StreamViews: streamViews}
	if d.Op != "query" {
		d.Op = "scan"
	}
	if d.View != "plain" && d.View != "ddb" {
		d.View = "grid"
	}
	if id := q.Get("flash"); id != "" {
		d.Settings, _ = a.flashes.get(a.k.Now(), ss.Subject, id)
	}
	d.Index = ti.Indexes[0]
	if ix, ok := ti.index(q.Get("index")); ok {
		d.Index = ix
	}
	d.Self = queryLink(q)
	d.Views = map[string]template.URL{}
	for _, v := range []string{"grid", "plain", "ddb"} {
		d.Views[v] = queryLink(q, "view", v)
	}
	d.Export = queryLink(q, "cur", "", "view", "", "limit", "")
	if err := a.runQuery(r.Context(), &d); err != nil {
		d.Error = inputMessage(err)
	}
	status := http.StatusOK
	if d.Error != "" || d.Settings.Error != "" {
		status = http.StatusBadRequest
	}
	a.k.Render(w, r, status, "table", d)
}

// runQuery runs the page of the Scan or Query the form describes.
func (a *Area) runQuery(ctx context.Context, d *tableData) error {
	q := d.Q
	spec, err := parseQuery(d.T, q)
	if err != nil {
		return err
	}
	cur, err := a.openCursor(q.Get("cur"), d.T.Name, d.Index.Name)
	if err != nil {
		return err
	}
	start, err := cur.start()
	if err != nil {
		return errCursor
	}
	items, last, scanned, err := spec.page(ctx, a.db, start, d.Limit)
	if err != nil {
		return err
	}
	d.Ran, d.Scanned, d.Page = true, scanned, len(cur.Keys)+1
	keys := d.T.KeyNames()
	if d.View == "grid" {
		d.Grid = newGrid(items, keyColumns(d.T, d.Index), keys)
	}
	for _, it := range items {
		if d.View == "grid" {
			break
		}
		k := Item{}
		var shown []string
		for _, n := range keys {
			if v, ok := it[n]; ok {
				k[n] = v
				shown = append(shown, n+" = "+scalarText(v))
			}
		}
		d.Items = append(d.Items, shownItem{Key: shown, Plain: pretty(itemPlain(it)), DDB: pretty(itemDDBJSON(it)), Ref: encodeKey(k)})
	}
	if len(last) > 0 {
		d.Next = queryLink(q, "cur", a.sign(cur.next(last)))
	}
	if len(cur.Keys) > 0 {
		d.Prev = queryLink(q, "cur", a.sign(cur.prev()))
		d.First = queryLink(q, "cur", "")
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
	s, ti, ok := a.operatorTable(w, r, false)
	if !ok {
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
	status := http.StatusOK
	// A refused save comes back here by a redirect: its message and text.
	if f, ok := a.flashes.get(a.k.Now(), s.Subject, r.URL.Query().Get("flash")); ok {
		d.Text, d.Format, d.Error, d.Msg, status = f.Form.Get("item"), f.Form.Get("format"), f.Error, "", http.StatusBadRequest
	}
	a.k.Render(w, r, status, "item", d)
}

// operatorTable is the start of every page of one table: the operator's
// session and the table the path names, described (with its TTL and
// backup settings when extras is set); when either fails it has answered
// (sign-in, 404 for a table that does not exist, or the store's error).
func (a *Area) operatorTable(w http.ResponseWriter, r *http.Request, extras bool) (console.Session, tableInfo, bool) {
	s, ok := a.k.Require(w, r, "operator")
	if !ok {
		return console.Session{}, tableInfo{}, false
	}
	ti, err := a.describe(r.Context(), r.PathValue("table"), extras)
	if err != nil {
		a.notFoundOr(w, r, err)
		return console.Session{}, tableInfo{}, false
	}
	return s, ti, true
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
	s, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	var err error
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
		// Shown by the GET the redirect leads to, so Back and reload never
		// post again.
		id := a.flashes.put(a.k.Now(), s.Subject, err.Error(), url.Values{"item": {d.Text}, "format": {d.Format}})
		http.Redirect(w, r, "/console/explorer/t/"+url.PathEscape(ti.Name)+"/item?"+url.Values{"key": {d.Ref}, "flash": {id}}.Encode(), http.StatusSeeOther)
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
		http.Redirect(w, r, r.URL.Path+"?"+url.Values{"key": {ref}}.Encode(), http.StatusSeeOther)
		return
	}
	if _, err := a.db.DeleteItem(r.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: k}); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/explorer/t/"+url.PathEscape(name)+"?msg=itemdeleted", http.StatusSeeOther)
}
