package ddb

import (
	"encoding/binary"
	"sync"

	"github.com/quarrydb/quarry/ddb/attr"
)

// A table's persisted metadata (tableMeta, with its indexes' indexMeta and
// its streams' streamMeta) and the in-memory table and index built from
// it: the storage keys of items and index entries, and index projections.
// The table operations themselves are in tables.go and tables_update.go.

// keyDef is one key attribute of a table or index.
type keyDef struct {
	Name string
	Kind attr.Kind
}

// indexMeta is the persisted description of a secondary index.
type indexMeta struct {
	ID                    uint64                 `json:"id"`
	Name                  string                 `json:"name"`
	Global                bool                   `json:"global"`
	KeySchema             []KeySchemaElement     `json:"keySchema"`
	Projection            Projection             `json:"projection"`
	ProvisionedThroughput *ProvisionedThroughput `json:"provisionedThroughput,omitempty"`
	Status                string                 `json:"status"`
	// Backfilling is set while the entries of the table's existing items
	// are still being written (an index added by UpdateTable); the index
	// can't be read until the backfill clears it (backfill.go).
	Backfilling bool `json:"backfilling,omitempty"`
}

// tableMeta is the persisted description of a table.
type tableMeta struct {
	ID                       uint64                 `json:"id"`
	TableID                  string                 `json:"tableId"`
	Name                     string                 `json:"name"`
	KeySchema                []KeySchemaElement     `json:"keySchema"`
	AttributeDefinitions     []AttributeDefinition  `json:"attributeDefinitions"`
	Indexes                  []*indexMeta           `json:"indexes"`
	BillingMode              string                 `json:"billingMode"`
	ProvisionedThroughput    *ProvisionedThroughput `json:"provisionedThroughput,omitempty"`
	Stream                   *StreamSpecification   `json:"stream,omitempty"`
	StreamLabel              string                 `json:"streamLabel,omitempty"`
	TableClass               string                 `json:"tableClass,omitempty"`
	DeletionProtection       bool                   `json:"deletionProtection,omitempty"`
	CreatedMillis            int64                  `json:"createdMillis"`
	BillingModeChangedMillis int64                  `json:"billingModeChangedMillis,omitempty"`
	Tags                     []Tag                  `json:"tags,omitempty"`
	TTLAttribute             string                 `json:"ttlAttribute,omitempty"`
	// PITR is set when point-in-time recovery is enabled.
	PITR bool `json:"pitr,omitempty"`
	// PITRSinceMillis is when PITR was (last) enabled; PITRDays is the
	// table's RecoveryPeriodInDays (see pitr.go).
	PITRSinceMillis int64 `json:"pitrSince,omitempty"`
	PITRDays        int   `json:"pitrDays,omitempty"`
	// Streams lists every stream the table has had, newest last.
	Streams []streamMeta `json:"streams,omitempty"`
	// DeletedMillis is when the table was deleted, in the record kept for
	// its streams (deletedtables.go); 0 for a live table.
	DeletedMillis int64 `json:"deleted,omitempty"`
}

// streamMeta describes one stream of a table (one per enablement).
type streamMeta struct {
	Label          string `json:"label"`
	ViewType       string `json:"viewType"`
	CreatedMillis  int64  `json:"created"`
	DisabledMillis int64  `json:"disabled,omitempty"`
}

// index is a secondary index ready for use.
type index struct {
	meta *indexMeta
	hash keyDef
	rng  *keyDef
	// include is the set of non-key attributes of an INCLUDE projection.
	include map[string]bool
	prefix  []byte
}

// table is an open table: its metadata and the derived key layout.
type table struct {
	meta    *tableMeta
	hash    keyDef
	rng     *keyDef
	indexes []*index
	prefix  []byte

	// ddl is held for reading by item writes and for writing by operations
	// that change the table's layout (index backfill, delete).
	ddl sync.RWMutex
}

// derivesFromItems reports whether writing an item on t changes more than
// the item's own key: secondary index entries, a TTL expiry entry or a
// change record (streams, point-in-time recovery), each computed from the
// old item as well as the new one.
func (t *table) derivesFromItems() bool {
	return len(t.indexes) > 0 || t.meta.TTLAttribute != "" || t.logged()
}

const (
	nsMeta  = 'm' // m<table name> → tableMeta JSON
	nsData  = 'd' // d<table id><hash32><pk>[<sk>] → item
	nsIndex = 'x' // x<index id><hash32><ipk>[<isk>]<pk>[<sk>] → projected item
	nsSeq   = 's' // s → last allocated id
	// nsRetired ('g', deletedtables.go) keeps deleted tables for their streams.
)

func attrKind(defs []AttributeDefinition, name string) attr.Kind {
	for _, d := range defs {
		if d.AttributeName == name {
			k, _ := attr.KindFromString(d.AttributeType)
			return k
		}
	}
	return 0
}

func keyDefs(schema []KeySchemaElement, defs []AttributeDefinition) (keyDef, *keyDef) {
	var h keyDef
	var r *keyDef
	for _, e := range schema {
		kd := keyDef{Name: e.AttributeName, Kind: attrKind(defs, e.AttributeName)}
		if e.KeyType == "HASH" {
			h = kd
		} else {
			r = &kd
		}
	}
	return h, r
}

func idPrefix(ns byte, id uint64) []byte {
	b := make([]byte, 9)
	b[0] = ns
	binary.BigEndian.PutUint64(b[1:], id)
	return b
}

func newTable(m *tableMeta) *table {
	t := &table{meta: m, prefix: idPrefix(nsData, m.ID)}
	t.hash, t.rng = keyDefs(m.KeySchema, m.AttributeDefinitions)
	for _, im := range m.Indexes {
		t.indexes = append(t.indexes, newIndex(im, m.AttributeDefinitions))
	}
	return t
}

func newIndex(im *indexMeta, defs []AttributeDefinition) *index {
	ix := &index{meta: im, prefix: idPrefix(nsIndex, im.ID)}
	ix.hash, ix.rng = keyDefs(im.KeySchema, defs)
	if im.Projection.ProjectionType == "INCLUDE" {
		ix.include = map[string]bool{}
		for _, a := range im.Projection.NonKeyAttributes {
			ix.include[a] = true
		}
	}
	return ix
}

func (t *table) index(name string) *index {
	for _, ix := range t.indexes {
		if ix.meta.Name == name {
			return ix
		}
	}
	return nil
}

// isKeyAttr reports whether name is a key attribute of the table.
func (t *table) isKeyAttr(name string) bool {
	return name == t.hash.Name || (t.rng != nil && name == t.rng.Name)
}

// itemKey returns the storage key of the item with the given key attributes.
// The caller MUST have validated the key.
func (t *table) itemKey(item attr.Item) []byte {
	hv := item[t.hash.Name]
	k := hashedPrefix(t.prefix, hv)
	if t.rng != nil {
		k = attr.AppendKey(k, item[t.rng.Name])
	}
	return k
}

// partitionPrefix returns the storage prefix of all items with partition key hv.
func (t *table) partitionPrefix(hv attr.Value) []byte { return hashedPrefix(t.prefix, hv) }

// hashedPrefix returns prefix, the 32-bit hash of partition key hv and hv's
// encoding: the start of every key of that partition in a table or index.
func hashedPrefix(prefix []byte, hv attr.Value) []byte {
	k := make([]byte, 0, len(prefix)+4+32)
	k = append(k, prefix...)
	k = binary.BigEndian.AppendUint32(k, attr.Hash32(hv))
	return attr.AppendKey(k, hv)
}

// entryKey returns the index entry key of item, or nil when the item lacks
// an index key attribute (sparse index).
func (ix *index) entryKey(t *table, item attr.Item) []byte {
	hv, ok := item[ix.hash.Name]
	if !ok || hv.Kind != ix.hash.Kind {
		return nil
	}
	var rv attr.Value
	if ix.rng != nil {
		rv, ok = item[ix.rng.Name]
		if !ok || rv.Kind != ix.rng.Kind {
			return nil
		}
	}
	k := hashedPrefix(ix.prefix, hv)
	if ix.rng != nil {
		k = attr.AppendKey(k, rv)
	}
	k = attr.AppendKey(k, item[t.hash.Name])
	if t.rng != nil {
		k = attr.AppendKey(k, item[t.rng.Name])
	}
	return k
}

func (ix *index) partitionPrefix(hv attr.Value) []byte { return hashedPrefix(ix.prefix, hv) }

// project returns the attributes of item that the index stores.
func (ix *index) project(t *table, item attr.Item) attr.Item {
	switch ix.meta.Projection.ProjectionType {
	case "ALL":
		return item
	}
	out := attr.Item{}
	for _, n := range []string{t.hash.Name, ix.hash.Name} {
		if v, ok := item[n]; ok {
			out[n] = v
		}
	}
	if t.rng != nil {
		if v, ok := item[t.rng.Name]; ok {
			out[t.rng.Name] = v
		}
	}
	if ix.rng != nil {
		if v, ok := item[ix.rng.Name]; ok {
			out[ix.rng.Name] = v
		}
	}
	for n := range ix.include {
		if v, ok := item[n]; ok {
			out[n] = v
		}
	}
	return out
}

// projects reports whether the index holds attribute name.
func (ix *index) projects(t *table, name string) bool {
	if ix.meta.Projection.ProjectionType == "ALL" {
		return true
	}
	if t.isKeyAttr(name) || name == ix.hash.Name || (ix.rng != nil && name == ix.rng.Name) {
		return true
	}
	return ix.include[name]
}

// prefixSuccessor returns the smallest key greater than every key that
// starts with p, or nil when there is none.
func prefixSuccessor(p []byte) []byte {
	out := append([]byte(nil), p...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] != 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}
