package explorer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/console"
)

// maxSelected bounds the items one bulk delete takes: a page's worth.
const maxSelected = 100

// streamViews are the stream settings the table page offers.
var streamViews = []string{"off", "KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"}

// tablePath is the table page's path.
func tablePath(name string) string { return "/console/explorer/t/" + url.PathEscape(name) }

// refuse keeps a refused settings form and redirects to the table page,
// which shows the message above the settings.
func (a *Area) refuse(w http.ResponseWriter, r *http.Request, s console.Session, table, msg string) {
	id := a.flashes.put(a.k.Now(), s.Subject, msg, r.PostForm)
	http.Redirect(w, r, tablePath(table)+"?"+url.Values{"flash": {id}}.Encode()+"#settings", http.StatusSeeOther)
}

// done redirects to the table page with the confirmation msg names.
func done(w http.ResponseWriter, r *http.Request, table, msg string) {
	http.Redirect(w, r, tablePath(table)+"?msg="+msg+"#settings", http.StatusSeeOther)
}

// settingsTable describes the posted table, answering 404 when it does
// not exist.
func (a *Area) settingsTable(w http.ResponseWriter, r *http.Request) (console.Session, tableInfo, bool) {
	s, ok := a.k.Require(w, r, "operator")
	if !ok {
		return s, tableInfo{}, false
	}
	ti, err := a.describe(r.Context(), r.PathValue("table"), false)
	if err != nil {
		a.notFoundOr(w, r, err)
		return s, tableInfo{}, false
	}
	return s, ti, true
}

func (a *Area) addGSI(w http.ResponseWriter, r *http.Request) {
	s, ti, ok := a.settingsTable(w, r)
	if !ok {
		return
	}
	f := r.PostForm
	name, pk, sk := strings.TrimSpace(f.Get("name")), strings.TrimSpace(f.Get("pk")), strings.TrimSpace(f.Get("sk"))
	var missing []string
	if name == "" {
		missing = append(missing, "the index name")
	}
	if pk == "" {
		missing = append(missing, "its partition key")
	}
	if len(missing) > 0 {
		a.refuse(w, r, s, ti.Name, "A new index needs "+strings.Join(missing, " and ")+".")
		return
	}
	keyType := func(t string) (types.ScalarAttributeType, bool) {
		switch t {
		case "S", "N", "B":
			return types.ScalarAttributeType(t), true
		}
		return "", false
	}
	proj := types.ProjectionType(f.Get("projection"))
	if proj != types.ProjectionTypeAll && proj != types.ProjectionTypeKeysOnly {
		a.refuse(w, r, s, ti.Name, "The projection is ALL or KEYS_ONLY.")
		return
	}
	create := &types.CreateGlobalSecondaryIndexAction{IndexName: aws.String(name), Projection: &types.Projection{ProjectionType: proj}}
	in := &dynamodb.UpdateTableInput{TableName: aws.String(ti.Name)}
	for _, k := range []struct {
		name, typ string
		kt        types.KeyType
	}{{pk, f.Get("pktype"), types.KeyTypeHash}, {sk, f.Get("sktype"), types.KeyTypeRange}} {
		if k.name == "" {
			continue
		}
		t, ok := keyType(k.typ)
		if !ok {
			a.refuse(w, r, s, ti.Name, "A key attribute's type is S, N or B.")
			return
		}
		create.KeySchema = append(create.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.name), KeyType: k.kt})
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(k.name), AttributeType: t})
	}
	// The table's own key attributes keep their definitions.
	for _, k := range []keyAttr{ti.Indexes[0].PK, ti.Indexes[0].SK} {
		if k.Name != "" && k.Name != pk && k.Name != sk {
			in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(k.Name), AttributeType: types.ScalarAttributeType(k.Type)})
		}
	}
	in.GlobalSecondaryIndexUpdates = []types.GlobalSecondaryIndexUpdate{{Create: create}}
	if _, err := a.db.UpdateTable(r.Context(), in); err != nil {
		a.refuse(w, r, s, ti.Name, console.StoreMessage(err))
		return
	}
	done(w, r, ti.Name, "gsiadded")
}

func (a *Area) deleteGSI(w http.ResponseWriter, r *http.Request) {
	s, ti, ok := a.settingsTable(w, r)
	if !ok {
		return
	}
	name := r.PostForm.Get("index")
	ix, ok := ti.index(name)
	if !ok || ix.Kind != "GSI" {
		a.refuse(w, r, s, ti.Name, fmt.Sprintf("The table has no global secondary index %q.", name))
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		http.Redirect(w, r, r.URL.Path+"?"+url.Values{"index": {name}}.Encode(), http.StatusSeeOther)
		return
	}
	_, err := a.db.UpdateTable(r.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(ti.Name),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String(name)}}}})
	if err != nil {
		a.refuse(w, r, s, ti.Name, console.StoreMessage(err))
		return
	}
	done(w, r, ti.Name, "gsideleted")
}

// confirmDeleteGSI asks to confirm an index's deletion: a GET, so Back
// after the deletion lands on a page, not on a POST's answer.
func (a *Area) confirmDeleteGSI(w http.ResponseWriter, r *http.Request) {
	_, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	name := r.URL.Query().Get("index")
	if ix, ok := ti.index(name); !ok || ix.Kind != "GSI" {
		a.k.Error(w, r, http.StatusNotFound, "No such index", fmt.Sprintf("The table %s has no global secondary index %q.", ti.Name, name))
		return
	}
	a.k.Confirm(w, r, console.Confirm{Title: "Delete the index " + name + "?",
		Message: "The global secondary index " + name + " of " + ti.Name + " will be deleted; the table's items stay.",
		Action:  r.URL.Path, Fields: map[string]string{"index": name}, Back: tablePath(ti.Name) + "#settings"})
}

func (a *Area) setTTL(w http.ResponseWriter, r *http.Request) {
	s, ti, ok := a.settingsTable(w, r)
	if !ok {
		return
	}
	attr := strings.TrimSpace(r.PostForm.Get("attribute"))
	on := r.PostForm.Get("enabled") == "true"
	if attr == "" {
		a.refuse(w, r, s, ti.Name, "TTL needs the name of the attribute that holds each item's expiry time (epoch seconds), to enable or to disable it.")
		return
	}
	_, err := a.db.UpdateTimeToLive(r.Context(), &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(ti.Name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(on)}})
	if err != nil {
		a.refuse(w, r, s, ti.Name, console.StoreMessage(err))
		return
	}
	if on {
		done(w, r, ti.Name, "ttlon")
	} else {
		done(w, r, ti.Name, "ttloff")
	}
}

func (a *Area) setStream(w http.ResponseWriter, r *http.Request) {
	s, ti, ok := a.settingsTable(w, r)
	if !ok {
		return
	}
	view := r.PostForm.Get("view")
	spec := &types.StreamSpecification{StreamEnabled: aws.Bool(view != "off")}
	switch view {
	case "off":
		if ti.Stream == "off" {
			a.refuse(w, r, s, ti.Name, "The stream is already off.")
			return
		}
	case "KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES":
		if ti.Stream == view {
			a.refuse(w, r, s, ti.Name, "The stream is already on with "+view+".")
			return
		}
		spec.StreamViewType = types.StreamViewType(view)
	default:
		a.refuse(w, r, s, ti.Name, "Choose the stream's setting: off, KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES.")
		return
	}
	if _, err := a.db.UpdateTable(r.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(ti.Name), StreamSpecification: spec}); err != nil {
		a.refuse(w, r, s, ti.Name, console.StoreMessage(err))
		return
	}
	done(w, r, ti.Name, "stream")
}

// selectedKeys decodes the keys of a bulk delete: each must be exactly
// the table's key (its attributes with their types), at most maxSelected.
func selectedKeys(ti tableInfo, refs []string) ([]Item, error) {
	if len(refs) == 0 {
		return nil, inputf("Select the items to delete first (the boxes at the start of the rows).")
	}
	if len(refs) > maxSelected {
		return nil, inputf("At most %d items are deleted at once; %d are selected.", maxSelected, len(refs))
	}
	keys := make([]Item, 0, len(refs))
	for _, ref := range refs {
		k, err := decodeKey(ref)
		if err != nil || !isKeyOf(ti, k) {
			return nil, inputf("A selected item's key is not a key of %s: reload the page and select again.", ti.Name)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// isKeyOf reports whether k is exactly a key of ti.
func isKeyOf(ti tableInfo, k Item) bool {
	want := ti.Indexes[0]
	n := 0
	for _, a := range []keyAttr{want.PK, want.SK} {
		if a.Name == "" {
			continue
		}
		n++
		v, ok := k[a.Name]
		if !ok || avType(v) != a.Type {
			return false
		}
	}
	return len(k) == n
}

// backTo returns the table page link back names when it is one of the
// table's pages, else the table page.
func backTo(table, back string) string {
	p := tablePath(table)
	if b := console.SafeNext(back); b == p || strings.HasPrefix(b, p+"?") {
		return b
	}
	return p
}

type deleteItemsData struct {
	T     tableInfo
	Keys  []string // compact plain JSON of each key
	Refs  []string
	Back  string
	Error string
}

// confirmDeleteItems is the confirmation of a bulk delete: a GET, so Back
// and reload never write.
func (a *Area) confirmDeleteItems(w http.ResponseWriter, r *http.Request) {
	_, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	d := deleteItemsData{T: ti, Back: backTo(ti.Name, q.Get("back")), Refs: q["key"]}
	keys, err := selectedKeys(ti, d.Refs)
	if err != nil {
		d.Error, d.Refs = inputMessage(err), nil
		a.k.Render(w, r, http.StatusBadRequest, "delete_items", d)
		return
	}
	for _, k := range keys {
		d.Keys = append(d.Keys, compact(itemPlain(k)))
	}
	a.k.Render(w, r, http.StatusOK, "delete_items", d)
}

// deleteItems deletes the confirmed keys, all checked before the first
// delete, and redirects back to the page they were selected on.
func (a *Area) deleteItems(w http.ResponseWriter, r *http.Request) {
	_, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	keys, err := selectedKeys(ti, r.PostForm["key"])
	if err != nil {
		a.k.Error(w, r, http.StatusBadRequest, "Nothing deleted", inputMessage(err))
		return
	}
	if err := a.batchDelete(r.Context(), ti.Name, keys); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	back, _ := url.Parse(backTo(ti.Name, r.PostForm.Get("back")))
	q := back.Query()
	q.Set("msg", "itemsdeleted")
	q.Set("n", strconv.Itoa(len(keys)))
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}

// batchDelete deletes keys of table with BatchWriteItem, 25 a call, until
// none is left unprocessed.
func (a *Area) batchDelete(ctx context.Context, table string, keys []Item) error {
	for len(keys) > 0 {
		n := min(25, len(keys))
		reqs := make([]types.WriteRequest, 0, n)
		for _, k := range keys[:n] {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
		}
		keys = keys[n:]
		pending := map[string][]types.WriteRequest{table: reqs}
		for tries := 0; len(pending) > 0; tries++ {
			if tries == 10 {
				return fmt.Errorf("explorer: the store left %d deletes unprocessed ten times", len(pending[table]))
			}
			out, err := a.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return err
			}
			pending = out.UnprocessedItems
		}
	}
	return nil
}
