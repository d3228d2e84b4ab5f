package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// maxTextParam bounds free-text parameters (q, author, isbn, ...).
const maxTextParam = 200

// maxOffset bounds offsets so that offset+limit never overflows.
const maxOffset = 1 << 30

// Pagination describes the page returned by a list endpoint. Offset is the
// offset asked for or, on a page reached by a cursor, the number of items
// the earlier pages returned. NextCursor is set (products only) when more
// items follow; it is a keyset position (the last item's sort value and
// id), so paging with it neither repeats nor skips products while others
// are written, except products whose sort value changes meanwhile.
type Pagination struct {
	Limit      int     `json:"limit"`
	Offset     int     `json:"offset"`
	NextCursor *string `json:"nextCursor,omitempty"`
}

// ProductPage is the body of GET /api/products.
type ProductPage struct {
	Items      []store.Product `json:"items"`
	Total      int             `json:"total"`
	Pagination Pagination      `json:"pagination"`
}

// CategoryPage is the body of GET /api/categories.
type CategoryPage struct {
	Items      []store.Category `json:"items"`
	Total      int              `json:"total"`
	Pagination Pagination       `json:"pagination"`
}

// NavigationTree is the body of GET /api/navigation.
type NavigationTree struct {
	Items []*store.NavigationNode `json:"items"`
}

// query wraps url.Values with strict accessors: unknown or repeated
// parameters are errors.
type query struct{ v url.Values }

func parseQuery(r *http.Request, allowed ...string) (query, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return query{}, badParam("query", "malformed query string")
	}
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ok := false
		for _, a := range allowed {
			if k == a || strings.HasSuffix(a, ".*") && strings.HasPrefix(k, strings.TrimSuffix(a, "*")) {
				ok = true
				break
			}
		}
		if !ok {
			return query{}, badParam(k, "unknown parameter (allowed: "+strings.Join(allowed, ", ")+")")
		}
		if len(v[k]) > 1 {
			return query{}, badParam(k, "given more than once")
		}
	}
	return query{v}, nil
}

func (q query) has(name string) bool { _, ok := q.v[name]; return ok }

func (q query) text(name string) (string, error) {
	s := q.v.Get(name)
	if len(s) > maxTextParam {
		return "", badParam(name, "longer than "+strconv.Itoa(maxTextParam)+" bytes")
	}
	if strings.ContainsRune(s, 0) {
		return "", badParam(name, "contains a NUL byte")
	}
	return strings.TrimSpace(s), nil
}

func (q query) id(name string) (string, error) {
	s := q.v.Get(name)
	if s == "" {
		if q.has(name) {
			return "", badParam(name, "empty")
		}
		return "", nil
	}
	if store.ValidateID(s) != nil {
		return "", badParam(name, "not a UUID")
	}
	return strings.ToLower(s), nil
}

func (q query) intRange(name string, def, min, max int) (int, error) {
	if !q.has(name) {
		return def, nil
	}
	n, err := strconv.Atoi(q.v.Get(name))
	if err != nil || n < min || n > max {
		return 0, badParam(name, "must be an integer from "+strconv.Itoa(min)+" to "+strconv.Itoa(max))
	}
	return n, nil
}

func (q query) price(name string) (*float64, error) {
	if !q.has(name) {
		return nil, nil
	}
	f, err := strconv.ParseFloat(q.v.Get(name), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return nil, badParam(name, "must be a non-negative number")
	}
	return &f, nil
}

func (q query) boolean(name string) (*bool, error) {
	if !q.has(name) {
		return nil, nil
	}
	b, err := strconv.ParseBool(q.v.Get(name))
	if err != nil {
		return nil, badParam(name, "must be true or false")
	}
	return &b, nil
}

func (s *server) getNavigation(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.fail(w, r, err)
		return
	}
	tree, err := s.opts.Store.NavigationTree(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if tree == nil {
		tree = []*store.NavigationNode{}
	}
	writeJSON(w, r, http.StatusOK, cachePublic, NavigationTree{Items: tree})
}

func (s *server) listCategories(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "navId", "parentId", "limit", "offset")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var f store.CategoryFilter
	if f.NavID, err = q.id("navId"); err == nil {
		if f.ParentID, err = q.id("parentId"); err == nil {
			if f.Limit, err = q.intRange("limit", store.DefaultCategoryLimit, 1, store.MaxListLimit); err == nil {
				f.Offset, err = q.intRange("offset", 0, 0, maxOffset)
			}
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, total, err := s.opts.Store.ListCategories(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if items == nil {
		items = []store.Category{}
	}
	writeJSON(w, r, http.StatusOK, cachePublic, CategoryPage{
		Items: items, Total: total, Pagination: Pagination{Limit: f.Limit, Offset: f.Offset},
	})
}

func (s *server) getCategory(w http.ResponseWriter, r *http.Request) {
	getByID(s, w, r, s.opts.Store.GetCategory)
}

func (s *server) getProduct(w http.ResponseWriter, r *http.Request) {
	getByID(s, w, r, s.opts.Store.GetProduct)
}

// getByID answers GET …/{id}: the id is validated, no query parameters are
// accepted, and the record found by get is returned.
func getByID[T any](s *server, w http.ResponseWriter, r *http.Request, get func(context.Context, string) (T, error)) {
	id, err := pathID(r)
	if err == nil {
		_, err = parseQuery(r)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := get(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, cachePublic, v)
}

func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if store.ValidateID(id) != nil {
		return "", badParam("id", "not a UUID")
	}
	return strings.ToLower(id), nil
}

// productFilterParams are the parameters that select products; the cursor
// is bound to their values.
var productFilterParams = []string{"categoryId", "q", "author", "isbn", "format", "condition",
	"minPrice", "maxPrice", "available", "active", "hasSpec", specParamPrefix + "*", "sort"}

// specParamPrefix starts the spec.<key>=<value> parameters: products whose
// specs hold exactly that string value (PostgreSQL: specs @> '{"key":
// "value"}').
const specParamPrefix = "spec."

// specFilters reads hasSpec (comma-separated keys the specs must have) and
// the spec.<key> parameters.
func specFilters(q query, f *store.ProductFilter) error {
	if q.has("hasSpec") {
		v, err := q.text("hasSpec")
		if err != nil {
			return err
		}
		if v == "" {
			return badParam("hasSpec", "empty")
		}
		for _, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			if store.ValidateSpecKey(k) != nil {
				return badParam("hasSpec", "spec keys are 1 to 64 letters, digits or underscores, separated by commas")
			}
			f.HasSpec = append(f.HasSpec, k)
		}
	}
	for _, name := range specParamNames(q) {
		k := strings.TrimPrefix(name, specParamPrefix)
		if store.ValidateSpecKey(k) != nil {
			return badParam(name, "the spec key must be 1 to 64 letters, digits or underscores")
		}
		v, err := q.text(name)
		if err != nil {
			return err
		}
		if v == "" {
			return badParam(name, "empty")
		}
		if f.Specs == nil {
			f.Specs = map[string]string{}
		}
		f.Specs[k] = v
	}
	if len(f.HasSpec)+len(f.Specs) > store.MaxSpecFilters {
		return badParam("hasSpec", "more than "+strconv.Itoa(store.MaxSpecFilters)+" spec filters")
	}
	return nil
}

// specParamNames returns q's spec.<key> parameter names, sorted.
func specParamNames(q query) []string {
	var names []string
	for k := range q.v {
		if strings.HasPrefix(k, specParamPrefix) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// parseProductFilter reads GET /api/products' parameters. pos is the
// number of products before the page: the offset, or the count the cursor
// carries.
func parseProductFilter(r *http.Request) (f store.ProductFilter, pos int, err error) {
	q, err := parseQuery(r, append(productFilterParams, "limit", "offset", "cursor")...)
	if err != nil {
		return f, 0, err
	}
	if f.CategoryID, err = q.id("categoryId"); err != nil {
		return f, 0, err
	}
	for _, t := range []struct {
		name string
		dst  *string
	}{{"q", &f.Q}, {"author", &f.Author}, {"isbn", &f.ISBN}, {"format", &f.Format}, {"condition", &f.Condition}} {
		if *t.dst, err = q.text(t.name); err != nil {
			return f, 0, err
		}
	}
	if f.MinPrice, err = q.price("minPrice"); err != nil {
		return f, 0, err
	}
	if f.MaxPrice, err = q.price("maxPrice"); err != nil {
		return f, 0, err
	}
	if f.MinPrice != nil && f.MaxPrice != nil && *f.MinPrice > *f.MaxPrice {
		return f, 0, badParam("minPrice", "greater than maxPrice")
	}
	if f.Available, err = q.boolean("available"); err != nil {
		return f, 0, err
	}
	if f.Active, err = q.boolean("active"); err != nil {
		return f, 0, err
	}
	if err := specFilters(q, &f); err != nil {
		return f, 0, err
	}
	switch f.Sort = q.v.Get("sort"); f.Sort {
	case "":
		if q.has("sort") {
			return f, 0, badParam("sort", "empty")
		}
		f.Sort = store.SortCreatedAtDesc
	case store.SortPriceAsc, store.SortPriceDesc, store.SortTitleAsc, store.SortTitleDesc, store.SortCreatedAtDesc:
	default:
		return f, 0, badParam("sort", "must be one of price_asc, price_desc, title_asc, title_desc, created_at_desc")
	}
	if f.Limit, err = q.intRange("limit", store.DefaultProductLimit, 1, store.MaxListLimit); err != nil {
		return f, 0, err
	}
	if f.Offset, err = q.intRange("offset", 0, 0, maxOffset); err != nil {
		return f, 0, err
	}
	pos = f.Offset
	if q.has("cursor") {
		if q.has("offset") {
			return f, 0, badParam("cursor", "cannot be combined with offset")
		}
		c, err := decodeCursor(q.v.Get("cursor"), filterFingerprint(q), f.Sort)
		if err != nil {
			return f, 0, err
		}
		f.After = &c.key
		pos = c.Pos
	}
	return f, pos, nil
}

func (s *server) listProducts(w http.ResponseWriter, r *http.Request) {
	f, pos, err := parseProductFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, total, err := s.opts.Store.ListProducts(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if items == nil {
		items = []store.Product{}
	}
	page := ProductPage{Items: items, Total: total, Pagination: Pagination{Limit: f.Limit, Offset: pos}}
	// A full page may have a successor: look one product past its last
	// (without counting) rather than trust the total, which concurrent
	// writes make stale.
	if len(items) == f.Limit {
		key := store.KeyOf(items[len(items)-1], f.Sort)
		probe := f
		probe.After, probe.Offset, probe.Limit, probe.SkipTotal = &key, 0, 1, true
		more, _, err := s.opts.Store.ListProducts(r.Context(), probe)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(more) > 0 {
			q, _ := parseQuery(r, append(productFilterParams, "limit", "offset", "cursor")...)
			c := encodeCursor(key, pos+len(items), filterFingerprint(q))
			page.Pagination.NextCursor = &c
		}
	}
	writeJSON(w, r, http.StatusOK, cachePublic, page)
}

// maxCursorLen bounds the cursor parameter. A cursor carries the last
// product's title for the title sorts, so it grows with the title.
const maxCursorLen = 8192

// cursor is the decoded form of the opaque pagination cursor: the position
// of the last product of the previous page in the query's sort (its sort
// value and id; keyset pagination), the number of products the earlier
// pages returned (reported as pagination.offset), and a fingerprint of the
// filter it belongs to, so that a cursor cannot be replayed against another
// query.
type cursor struct {
	Filter  string   `json:"f"`
	ID      string   `json:"i"`
	Price   *float64 `json:"p,omitempty"`
	Title   *string  `json:"t,omitempty"`
	Created int64    `json:"c,omitempty"` // Unix microseconds
	Pos     int      `json:"n"`

	key store.ProductKey
}

// filterFingerprint hashes the filter parameters (not limit, offset or
// cursor) of q.
func filterFingerprint(q query) string {
	h := sha256.New()
	for _, k := range productFilterParams {
		h.Write([]byte(k + "=" + q.v.Get(k) + "\x00"))
	}
	for _, k := range specParamNames(q) {
		h.Write([]byte(k + "=" + q.v.Get(k) + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func encodeCursor(key store.ProductKey, pos int, fingerprint string) string {
	c := cursor{Filter: fingerprint, ID: key.ID, Price: key.Price, Pos: pos}
	if key.Title != "" {
		c.Title = &key.Title
	}
	if !key.CreatedAt.IsZero() {
		c.Created = key.CreatedAt.UnixMicro()
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor decodes a cursor of the query whose filter has fingerprint
// and whose sort is sortName, and checks that it holds the position that
// sort needs.
func decodeCursor(s, fingerprint, sortName string) (cursor, error) {
	var c cursor
	if len(s) > maxCursorLen {
		return c, badParam("cursor", "malformed")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, badParam("cursor", "malformed")
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Pos < 0 || c.Pos > maxOffset || store.ValidateID(c.ID) != nil {
		return c, badParam("cursor", "malformed")
	}
	if c.Filter != fingerprint {
		return c, badParam("cursor", "belongs to a different query")
	}
	c.key = store.ProductKey{ID: strings.ToLower(c.ID), Price: c.Price}
	switch sortName {
	case store.SortTitleAsc, store.SortTitleDesc:
		if c.Title == nil {
			return c, badParam("cursor", "malformed")
		}
		c.key.Title = *c.Title
	case store.SortCreatedAtDesc:
		if c.Created <= 0 {
			return c, badParam("cursor", "malformed")
		}
		c.key.CreatedAt = time.UnixMicro(c.Created).UTC()
	}
	return c, nil
}
