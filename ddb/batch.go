package ddb

import (
	"sort"
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

const (
	maxBatchGetKeys  = 100
	maxBatchWrites   = 25
	maxBatchGetBytes = 16 << 20
)

// BatchGetItemOutput is the response of BatchGetItem.
type BatchGetItemOutput struct {
	Responses        map[string][]attr.Item        `json:"Responses"`
	UnprocessedKeys  map[string]*KeysAndAttributes `json:"UnprocessedKeys"`
	ConsumedCapacity []*ConsumedCapacity           `json:"ConsumedCapacity,omitempty"`
}

// BatchGetItem reads up to 100 items from one or more tables. Keys beyond
// the 16 MB response limit are returned in UnprocessedKeys.
func (s *Store) BatchGetItem(in *BatchGetItemInput) (*BatchGetItemOutput, error) {
	var c constraintErrors
	if len(in.RequestItems) == 0 {
		return nil, validationf("The requestItems parameter is required for BatchGetItem")
	}
	total := 0
	names := make([]string, 0, len(in.RequestItems))
	for name, ka := range in.RequestItems {
		names = append(names, name)
		checkName(&c, "requestItems.key", name)
		if ka == nil || ka.Keys == nil {
			c.add("Value null at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must not be null", name)
			continue
		}
		if len(ka.Keys) == 0 {
			c.add("Value '[]' at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1", name)
		}
		if len(ka.Keys) > maxBatchGetKeys {
			c.add("Value at 'RequestItems.%s.member.Keys' failed to satisfy constraint: Member must have length less than or equal to 100", name)
		}
		total += len(ka.Keys)
	}
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if err := c.err(); err != nil {
		return nil, err
	}
	if total > maxBatchGetKeys {
		return nil, validationf("Too many items requested for the BatchGetItem call")
	}
	sort.Strings(names)
	type plan struct {
		t    *table
		proj expr.Projection
	}
	plans := map[string]plan{}
	for _, name := range names {
		ka := in.RequestItems[name]
		p, perr := params(ka.exprInput, ka.ProjectionExpression != nil)
		if perr != nil {
			return nil, perr
		}
		proj, err := readProjection(ka.ProjectionExpression, ka.AttributesToGet, p)
		if err != nil {
			return nil, err
		}
		if err := p.CheckUnused(); err != nil {
			return nil, err
		}
		t, terr := s.table(name)
		if terr != nil {
			return nil, terr
		}
		seen := map[string]bool{}
		for _, k := range ka.Keys {
			if err := t.validateKey(k); err != nil {
				return nil, err
			}
			sk := string(t.itemKey(k))
			if seen[sk] {
				return nil, validationf("Provided list of item keys contains duplicates")
			}
			seen[sk] = true
		}
		plans[name] = plan{t, proj}
	}
	out := &BatchGetItemOutput{Responses: map[string][]attr.Item{}, UnprocessedKeys: map[string]*KeysAndAttributes{}}
	size := 0
	var caps tableCapacities
	for _, name := range names {
		ka, pl := in.RequestItems[name], plans[name]
		out.Responses[name] = []attr.Item{}
		for i, k := range ka.Keys {
			if size >= maxBatchGetBytes {
				rest := *ka
				rest.Keys = ka.Keys[i:]
				out.UnprocessedKeys[name] = &rest
				break
			}
			item, err := s.getItem(pl.t.itemKey(k))
			if err != nil {
				return nil, internal(pl.t.named(err))
			}
			caps.of(pl.t).units += itemReadUnits(itemSize(item), ka.ConsistentRead != nil && *ka.ConsistentRead)
			if item == nil {
				continue
			}
			size += item.Size()
			if pl.proj != nil {
				item = pl.proj.Apply(item)
				if item == nil {
					item = attr.Item{}
				}
			}
			out.Responses[name] = append(out.Responses[name], item)
		}
	}
	out.ConsumedCapacity = caps.consumed(in.ReturnConsumedCapacity, splitNone)
	return out, nil
}

// BatchWriteItemOutput is the response of BatchWriteItem.
type BatchWriteItemOutput struct {
	UnprocessedItems      map[string][]WriteRequest           `json:"UnprocessedItems"`
	ConsumedCapacity      []*ConsumedCapacity                 `json:"ConsumedCapacity,omitempty"`
	ItemCollectionMetrics map[string][]*ItemCollectionMetrics `json:"ItemCollectionMetrics,omitempty"`
}

// BatchWriteItem puts or deletes up to 25 items in one or more tables. The
// store validates every request before writing any and commits them all in
// one atomic batch, so UnprocessedItems is always empty.
func (s *Store) BatchWriteItem(in *BatchWriteItemInput) (*BatchWriteItemOutput, error) {
	var c constraintErrors
	if len(in.RequestItems) == 0 {
		return nil, validationf("The requestItems parameter is required for BatchWriteItem")
	}
	total := 0
	names := make([]string, 0, len(in.RequestItems))
	for name, reqs := range in.RequestItems {
		names = append(names, name)
		checkName(&c, "requestItems.key", name)
		if len(reqs) == 0 || len(reqs) > maxBatchWrites {
			c.add("Value '{%s=[%s]}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]", name, describeWrites(reqs))
		}
		total += len(reqs)
	}
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	checkReturnICM(&c, in.ReturnItemCollectionMetrics)
	if err := c.err(); err != nil {
		return nil, err
	}
	if total > maxBatchWrites {
		return nil, validationf("Too many items requested for the BatchWriteItem call")
	}
	sort.Strings(names)
	type write struct {
		t    *table
		key  []byte
		item attr.Item // nil for a delete
		// keyAttrs holds the item's key attributes (the item for a put).
		keyAttrs attr.Item
	}
	var writes []write
	var unlocks []func()
	defer func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}()
	for _, name := range names {
		t, unlock, terr := s.writeTable(name)
		if terr != nil {
			return nil, terr
		}
		unlocks = append(unlocks, unlock)
		seen := map[string]bool{}
		for _, r := range in.RequestItems[name] {
			switch {
			case r.PutRequest != nil && r.DeleteRequest != nil, r.PutRequest == nil && r.DeleteRequest == nil:
				return nil, validationf("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
			case r.PutRequest != nil:
				if r.PutRequest.Item == nil {
					return nil, validationf("1 validation error detected: Value null at 'requestItems.%s.member.putRequest.item' failed to satisfy constraint: Member must not be null", name)
				}
				if err := t.validateItem(r.PutRequest.Item); err != nil {
					return nil, err
				}
				k := t.itemKey(r.PutRequest.Item)
				if seen[string(k)] {
					return nil, validationf("Provided list of item keys contains duplicates")
				}
				seen[string(k)] = true
				writes = append(writes, write{t, k, r.PutRequest.Item, r.PutRequest.Item})
			default:
				if r.DeleteRequest.Key == nil {
					return nil, validationf("1 validation error detected: Value null at 'requestItems.%s.member.deleteRequest.key' failed to satisfy constraint: Member must not be null", name)
				}
				if err := t.validateKey(r.DeleteRequest.Key); err != nil {
					return nil, err
				}
				k := t.itemKey(r.DeleteRequest.Key)
				if seen[string(k)] {
					return nil, validationf("Provided list of item keys contains duplicates")
				}
				seen[string(k)] = true
				writes = append(writes, write{t, k, nil, r.DeleteRequest.Key})
			}
		}
	}
	keys := make([][]byte, len(writes))
	for i, w := range writes {
		keys[i] = w.key
	}
	defer s.lockKeys(keys...)()
	b := s.newBatch()
	defer b.release(s)
	var caps tableCapacities
	// Without consumed capacity in the answer, a write on a table where
	// nothing derives from items (table.derivesFromItems) changes only
	// the item's own key: it is staged without reading the item it
	// replaces or deletes, as PutItem's putBlind does.
	blind := !wantCapacity(in.ReturnConsumedCapacity)
	for _, w := range writes {
		if blind && !w.t.derivesFromItems() {
			s.stageItem(b, w.t, w.key, nil, w.item)
			continue
		}
		old, err := s.getItem(w.key)
		if err != nil {
			if !isCorrupt(err) {
				return nil, internal(err)
			}
			// A put or delete replaces what cannot be decoded (corrupt.go).
			if err := s.stageCorruptRemoval(b, w.t, w.key); err != nil {
				return nil, internal(err)
			}
			old = nil
		} else if old == nil && w.item == nil {
			caps.of(w.t).addWrite(w.t, old, w.item, 1)
			continue
		}
		caps.of(w.t).addWrite(w.t, old, w.item, 1)
		s.stageWrite(b, w.t, w.key, old, w.item)
	}
	if err := s.commit(b); err != nil {
		return nil, internal(err)
	}
	out := &BatchWriteItemOutput{UnprocessedItems: map[string][]WriteRequest{}, ConsumedCapacity: caps.consumed(in.ReturnConsumedCapacity, splitNone)}
	for _, w := range writes {
		if m := s.itemCollectionMetrics(w.t, in.ReturnItemCollectionMetrics, w.keyAttrs); m != nil {
			if out.ItemCollectionMetrics == nil {
				out.ItemCollectionMetrics = map[string][]*ItemCollectionMetrics{}
			}
			out.ItemCollectionMetrics[w.t.meta.Name] = append(out.ItemCollectionMetrics[w.t.meta.Name], m)
		}
	}
	return out, nil
}

// describeWrites renders write requests the way DynamoDB echoes them in
// validation messages.
func describeWrites(reqs []WriteRequest) string {
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		switch {
		case r.PutRequest != nil:
			b, _ := r.PutRequest.Item.MarshalJSON()
			parts[i] = "WriteRequest(PutRequest=PutRequest(Item=" + string(b) + "))"
		case r.DeleteRequest != nil:
			b, _ := r.DeleteRequest.Key.MarshalJSON()
			parts[i] = "WriteRequest(DeleteRequest=DeleteRequest(Key=" + string(b) + "))"
		default:
			parts[i] = "WriteRequest()"
		}
	}
	return strings.Join(parts, ", ")
}
