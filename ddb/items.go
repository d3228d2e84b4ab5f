package ddb

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

// Limits of items and keys, as DynamoDB's.
const (
	MaxItemSize     = 400 * 1024
	maxHashKeySize  = 2048
	maxRangeKeySize = 1024
)

// encodeItem returns the stored form of an item (attr's binary format).
func encodeItem(it attr.Item) []byte { return it.AppendBinary(nil) }

// decodeItem decodes a stored item.
func decodeItem(b []byte) (attr.Item, error) {
	it, err := attr.DecodeBinary(b)
	if err != nil {
		return nil, fmt.Errorf("ddb: decode stored item: %w", err)
	}
	return it, nil
}

// appendItemJSON appends the JSON of the stored item b to buf without
// decoding it, and returns the item's size.
func appendItemJSON(buf *bytes.Buffer, b []byte) (int, error) {
	size, err := attr.AppendBinaryJSON(buf, b)
	if err != nil {
		return 0, fmt.Errorf("ddb: decode stored item: %w", err)
	}
	return size, nil
}

func keyValueSize(v attr.Value) int {
	if v.Kind == attr.KindB {
		return len(v.B)
	}
	if v.Kind == attr.KindN {
		return v.Size()
	}
	return len(v.S)
}

func emptyKeyValue(v attr.Value) string {
	if v.Kind == attr.KindS && v.S == "" {
		return "string"
	}
	if v.Kind == attr.KindB && len(v.B) == 0 {
		return "binary"
	}
	return ""
}

// validateKey checks a Key parameter against the table's key schema.
func (t *table) validateKey(key attr.Item) *Error {
	want := 1
	if t.rng != nil {
		want = 2
	}
	for _, kd := range t.keyDefs() {
		v, ok := key[kd.Name]
		if !ok || v.Kind != kd.Kind {
			return validationf("The provided key element does not match the schema")
		}
	}
	if len(key) != want {
		return validationf("The provided key element does not match the schema")
	}
	for _, kd := range t.keyDefs() {
		if e := emptyKeyValue(key[kd.Name]); e != "" {
			return validationf("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", e, kd.Name)
		}
	}
	return checkKeySizes(t, key)
}

func checkKeySizes(t *table, item attr.Item) *Error {
	if keyValueSize(item[t.hash.Name]) > maxHashKeySize {
		return invalidParam("Size of hashkey has exceeded the maximum size limit of2048 bytes")
	}
	if t.rng != nil && keyValueSize(item[t.rng.Name]) > maxRangeKeySize {
		return invalidParam("Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
	}
	return nil
}

func (t *table) keyDefs() []keyDef {
	if t.rng == nil {
		return []keyDef{t.hash}
	}
	return []keyDef{t.hash, *t.rng}
}

// keyOf returns the key attributes of item.
func (t *table) keyOf(item attr.Item) attr.Item {
	k := attr.Item{t.hash.Name: item[t.hash.Name]}
	if t.rng != nil {
		k[t.rng.Name] = item[t.rng.Name]
	}
	return k
}

// validateItem checks a whole item to be written: key attributes, index
// key attributes and the size limit.
func (t *table) validateItem(item attr.Item) *Error {
	if err := checkNesting(item); err != nil {
		return err
	}
	for name := range item {
		if len(name) > expr.MaxAttrNameLen {
			return validationf("%s", expr.MsgAttrNameTooLarge)
		}
	}
	for _, kd := range t.keyDefs() {
		v, ok := item[kd.Name]
		if !ok {
			return invalidParam("Missing the key %s in the item", kd.Name)
		}
		if v.Kind != kd.Kind {
			return invalidParam("Type mismatch for key %s expected: %s actual: %s", kd.Name, kd.Kind, v.Kind)
		}
		if e := emptyKeyValue(v); e != "" {
			return validationf("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", e, kd.Name)
		}
	}
	if err := checkKeySizes(t, item); err != nil {
		return err
	}
	for _, ix := range t.indexes {
		kds := []keyDef{ix.hash}
		if ix.rng != nil {
			kds = append(kds, *ix.rng)
		}
		for _, kd := range kds {
			v, ok := item[kd.Name]
			if !ok || t.isKeyAttr(kd.Name) {
				continue
			}
			if v.Kind != kd.Kind {
				return invalidParam("Type mismatch for Index Key %s Expected: %s Actual: %s IndexName: %s", kd.Name, kd.Kind, v.Kind, ix.meta.Name)
			}
			if e := emptyKeyValue(v); e != "" {
				return validationf("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s", e, ix.meta.Name, kd.Name)
			}
		}
	}
	if item.Size() > MaxItemSize {
		return validationf("Item size has exceeded the maximum allowed size")
	}
	return nil
}

// checkNesting refuses an item nested deeper than DynamoDB allows
// (attr.MaxNestingLevels). Every write checks the item it writes, an
// UpdateItem the item its update produces, so no stored item is deeper.
func checkNesting(item attr.Item) *Error {
	if item.TooDeep() {
		return validationf("%s", attr.NestingMessage)
	}
	return nil
}

// checkValuesNesting applies the same limit to ExpressionAttributeValues,
// each a level-1 value, as PutItem, UpdateItem and DeleteItem check them
// (TransactWriteItems does not).
func checkValuesNesting(values map[string]attr.Value) *Error {
	for _, v := range values {
		if v.TooDeep() {
			return validationf("%s", attr.NestingMessage)
		}
	}
	return nil
}

// getItem reads the item stored under key, or nil.
func (s *Store) getItem(key []byte) (attr.Item, error) { return readItem(s.db, key) }

// getItemJSON returns the JSON of the item stored under key, in a pooled
// buffer the caller gives back with putBuffer, and the item's size; or nil
// and 0.
func (s *Store) getItemJSON(key []byte) (*bytes.Buffer, int, error) {
	buf := getBuffer()
	size := 0
	found, err := readValue(s.db, key, func(v []byte) (err error) {
		if size, err = appendItemJSON(buf, v); err != nil {
			return corruptAt(key, err)
		}
		return nil
	})
	if err != nil || !found {
		putBuffer(buf)
		return nil, 0, err
	}
	return buf, size, nil
}

// readItem reads the item stored under key in r (the database or a
// snapshot of it), or nil.
func readItem(r pebble.Reader, key []byte) (item attr.Item, err error) {
	_, err = readValue(r, key, func(v []byte) error {
		if item, err = decodeItem(v); err != nil {
			return corruptAt(key, err)
		}
		return nil
	})
	return item, err
}

// stageWrite adds to b the change of one item from old to new (either may
// be nil) with its index entries.
func (s *Store) stageWrite(b *wbatch, t *table, key []byte, old, new attr.Item) {
	s.stageLog(b, t, old, new, false)
	s.stageTTL(b, t, key, old, new)
	s.stageItem(b, t, key, old, new)
}

// stageItem adds the item and index changes of one item change to b.
func (s *Store) stageItem(b *wbatch, t *table, key []byte, old, new attr.Item) {
	if new != nil {
		b.Set(key, encodeItem(new), nil)
	} else {
		b.Delete(key, nil)
	}
	for _, ix := range t.indexes {
		var ok, nk []byte
		if old != nil {
			ok = ix.entryKey(t, old)
		}
		if new != nil {
			nk = ix.entryKey(t, new)
		}
		if ok != nil && !bytes.Equal(ok, nk) {
			b.Delete(ok, nil)
		}
		if nk != nil {
			b.Set(nk, encodeItem(ix.project(t, new)), nil)
		}
	}
}

// params validates the ExpressionAttributeNames/Values of a request.
// usesExpr says whether the request has any expression.
//
// valueExprs names the request's expressions that can use values, for
// DynamoDB's message when values are given without any of them.
func params(in exprInput, usesExpr bool, valueExprs ...string) (*expr.Params, *Error) {
	if in.ExpressionAttributeNames != nil {
		if !usesExpr {
			return nil, validationf("ExpressionAttributeNames can only be specified when using expressions")
		}
		if len(in.ExpressionAttributeNames) == 0 {
			return nil, validationf("ExpressionAttributeNames must not be empty")
		}
	}
	if in.ExpressionAttributeValues != nil {
		if !usesExpr {
			msg := "ExpressionAttributeValues can only be specified when using expressions"
			switch len(valueExprs) {
			case 0:
			case 1:
				msg += ": " + valueExprs[0] + " is null"
			default:
				msg += ": " + strings.Join(valueExprs, " and ") + " are null"
			}
			return nil, validationf("%s", msg)
		}
		if len(in.ExpressionAttributeValues) == 0 {
			return nil, validationf("ExpressionAttributeValues must not be empty")
		}
		for k := range in.ExpressionAttributeValues {
			if !strings.HasPrefix(k, ":") {
				return nil, validationf("ExpressionAttributeValues contains invalid key: Syntax error; key: \"%s\"", k)
			}
		}
	}
	for k, name := range in.ExpressionAttributeNames {
		if !strings.HasPrefix(k, "#") {
			return nil, validationf("ExpressionAttributeNames contains invalid key: Syntax error; key: \"%s\"", k)
		}
		if len(name) > expr.MaxAttrNameLen {
			return nil, validationf("%s", expr.MsgAttrNameTooLarge)
		}
	}
	return expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues), nil
}

// mixErr reports the use of both legacy and expression parameters.
func mixErr(legacy, expression []string) *Error {
	return validationf("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}", strings.Join(legacy, ", "), strings.Join(expression, ", "))
}

func present(pairs ...any) []string {
	var out []string
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1].(bool) {
			out = append(out, pairs[i].(string))
		}
	}
	return out
}

// writeCondition parses a write's ConditionExpression or Expected.
func writeCondition(ce *string, expected map[string]expr.ExpectedAttr, condOp string, p *expr.Params) (*expr.Condition, error) {
	if ce != nil {
		return expr.ParseCondition(expr.ConditionExpression, *ce, p)
	}
	if len(expected) > 0 {
		return expr.FromExpected(expected, condOp)
	}
	// An empty Expected is no condition, and gives ConditionalOperator
	// nothing to combine.
	if condOp != "" {
		return nil, validationf("ConditionalOperator can only be used when Expected or KeyConditions or QueryFilter or ScanFilter is present")
	}
	return nil, nil
}

func checkReturnValues(rv string, allowed ...string) *Error {
	if rv == "" || rv == "NONE" {
		return nil
	}
	switch rv {
	case "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW":
	default:
		return validationf("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", rv)
	}
	for _, a := range allowed {
		if a == rv {
			return nil
		}
	}
	return validationf("ReturnValues can only be ALL_OLD or NONE")
}

func checkRVOnFailure(rv string) *Error {
	switch rv {
	case "", "NONE", "ALL_OLD":
		return nil
	}
	return validationf("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", rv)
}

func failed(rvOnFailure string, old attr.Item) *Error {
	if rvOnFailure == "ALL_OLD" && old != nil {
		return conditionFailed(old)
	}
	return conditionFailed(nil)
}

// ItemOutput is the response of PutItem, UpdateItem and DeleteItem.
type ItemOutput struct {
	Attributes            attr.Item              `json:"Attributes,omitempty"`
	ConsumedCapacity      *ConsumedCapacity      `json:"ConsumedCapacity,omitempty"`
	ItemCollectionMetrics *ItemCollectionMetrics `json:"ItemCollectionMetrics,omitempty"`
}

// ConsumedCapacity reports the capacity units an operation used.
type ConsumedCapacity struct {
	TableName              string               `json:"TableName"`
	CapacityUnits          float64              `json:"CapacityUnits"`
	ReadCapacityUnits      float64              `json:"ReadCapacityUnits,omitempty"`
	WriteCapacityUnits     float64              `json:"WriteCapacityUnits,omitempty"`
	Table                  *Capacity            `json:"Table,omitempty"`
	GlobalSecondaryIndexes map[string]*Capacity `json:"GlobalSecondaryIndexes,omitempty"`
	LocalSecondaryIndexes  map[string]*Capacity `json:"LocalSecondaryIndexes,omitempty"`
}

// Capacity is the capacity consumed by one table or index.
type Capacity struct {
	CapacityUnits      float64 `json:"CapacityUnits"`
	ReadCapacityUnits  float64 `json:"ReadCapacityUnits,omitempty"`
	WriteCapacityUnits float64 `json:"WriteCapacityUnits,omitempty"`
}

func nilIfEmpty(it attr.Item) attr.Item {
	if len(it) == 0 {
		return nil
	}
	return it
}

// check validates the parameters every single-item write shares, with
// member naming the Item or Key parameter (nil when absent); the
// ReturnValues a write allows are given.
func (w *writeInput) check(member string, memberNil bool, returnValues ...string) error {
	var c constraintErrors
	checkTableName(&c, "tableName", w.TableName)
	if memberNil {
		c.add("Value null at '%s' failed to satisfy constraint: Member must not be null", member)
	}
	checkReturnConsumedCapacity(&c, w.ReturnConsumedCapacity)
	checkReturnICM(&c, w.ReturnItemCollectionMetrics)
	switch w.ReturnValues {
	case "", "NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW":
	default:
		c.add("Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", w.ReturnValues)
	}
	if err := c.err(); err != nil {
		return err
	}
	if err := checkReturnValues(w.ReturnValues, returnValues...); err != nil {
		return err
	}
	if err := checkRVOnFailure(w.ReturnValuesOnConditionCheckFailure); err != nil {
		return err
	}
	return nil
}

// condition validates the expression parameters of a PutItem or
// DeleteItem and parses its condition.
func (w *writeInput) condition() (*expr.Condition, error) {
	if w.ConditionExpression != nil && w.Expected != nil {
		return nil, mixErr([]string{"Expected"}, []string{"ConditionExpression"})
	}
	p, perr := params(w.exprInput, w.ConditionExpression != nil, "ConditionExpression")
	if perr != nil {
		return nil, perr
	}
	if err := checkValuesNesting(w.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	cond, err := writeCondition(w.ConditionExpression, w.Expected, w.ConditionalOperator, p)
	if err != nil {
		return nil, err
	}
	return cond, p.CheckUnused()
}

// applyWrite runs one conditional single-item write on t: it locks the
// item, reads it, checks cond, computes the new item with change (nil
// deletes) and commits. It returns the old and new items. change MUST
// return a valid item (validateItem): PutItem's is validated before the
// key is computed, UpdateItem validates what its update produced.
//
// blind says that change does not read the old item (PutItem, DeleteItem):
// then an old item that cannot be decoded is replaced or removed when there
// is no condition to evaluate on it (corrupt.go), as if it were absent.
// Otherwise it is an error naming its key.
func (s *Store) applyWrite(t *table, key []byte, cond *expr.Condition, rvOnFailure string, blind bool, change func(old attr.Item) (attr.Item, error)) (old, new attr.Item, err error) {
	defer s.lockKeys(key)()
	old, err = s.getItem(key)
	corrupt := false
	if err != nil {
		if !blind || cond != nil || !isCorrupt(err) {
			return nil, nil, internal(t.named(err))
		}
		old, corrupt = nil, true
	}
	if cond != nil && !cond.Eval(old) {
		return nil, nil, failed(rvOnFailure, old)
	}
	if new, err = change(old); err != nil {
		return nil, nil, err
	}
	if old == nil && new == nil && !corrupt {
		return nil, nil, nil
	}
	b := s.newBatch()
	defer b.release(s)
	if corrupt {
		if err := s.stageCorruptRemoval(b, t, key); err != nil {
			return nil, nil, internal(err)
		}
	}
	s.stageWrite(b, t, key, old, new)
	if err := s.commit(b); err != nil {
		return nil, nil, internal(err)
	}
	return old, new, nil
}

// putBlind writes item under key on t, replacing whatever is stored there
// without reading it. It is applyWrite for an unconditional write whose
// answer needs no old item, on a table where no index entry, expiry entry
// or change record derives from items (table.derivesFromItems): there the
// item's own key is all the write changes. An old item that cannot be
// decoded is replaced as applyWrite's blind writes replace it.
//
// It still takes the item's lock: a conditional write of the same item
// reads, checks and commits under it, and a write landing between its
// check and its commit would be lost.
func (s *Store) putBlind(t *table, key []byte, item attr.Item) error {
	defer s.lockKeys(key)()
	b := s.newBatch()
	defer b.release(s)
	b.Set(key, encodeItem(item), nil)
	if err := s.commit(b); err != nil {
		return internal(err)
	}
	return nil
}

// PutItem writes an item, replacing any item with the same key.
func (s *Store) PutItem(in *PutItemInput) (*ItemOutput, error) {
	if err := in.check("item", in.Item == nil, "ALL_OLD"); err != nil {
		return nil, err
	}
	cond, err := in.condition()
	if err != nil {
		return nil, err
	}
	t, unlock, terr := s.writeTable(*in.TableName)
	if terr != nil {
		return nil, terr
	}
	defer unlock()
	if err := t.validateItem(in.Item); err != nil {
		return nil, err
	}
	key := t.itemKey(in.Item)
	var old attr.Item
	if cond == nil && in.ReturnValues != "ALL_OLD" && !wantCapacity(in.ReturnConsumedCapacity) && !t.derivesFromItems() {
		// Nothing in the answer or in the store depends on the item this
		// one replaces: write without reading it.
		if err := s.putBlind(t, key, in.Item); err != nil {
			return nil, err
		}
	} else if old, _, err = s.applyWrite(t, key, cond, in.ReturnValuesOnConditionCheckFailure, true,
		func(attr.Item) (attr.Item, error) { return in.Item, nil }); err != nil {
		return nil, err
	}
	out := &ItemOutput{ConsumedCapacity: writeCapacity(t, in.ReturnConsumedCapacity, old, in.Item),
		ItemCollectionMetrics: s.itemCollectionMetrics(t, in.ReturnItemCollectionMetrics, in.Item)}
	if in.ReturnValues == "ALL_OLD" {
		out.Attributes = old
	}
	return out, nil
}

// GetItemOutput is the response of GetItem. The wire form has an Item when
// Item is not nil, even empty ("Item": {} for a projection that matched no
// attribute of an existing item); a missing item has none.
type GetItemOutput struct {
	Item             attr.Item         `json:"Item,omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity,omitempty"`

	// itemJSON, when not nil, is the JSON of the item in place of Item
	// (GetItemInput.wire), in a pooled buffer that release gives back.
	itemJSON *bytes.Buffer
}

// readProjection parses ProjectionExpression or AttributesToGet.
func readProjection(pe *string, atg []string, p *expr.Params) (expr.Projection, error) {
	if pe != nil && atg != nil {
		return nil, mixErr([]string{"AttributesToGet"}, []string{"ProjectionExpression"})
	}
	if pe != nil {
		return expr.ParseProjection(*pe, p)
	}
	if atg != nil {
		if len(atg) == 0 {
			return nil, validationf("1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
		}
		seen := map[string]bool{}
		for _, a := range atg {
			if seen[a] {
				return nil, validationf("One or more parameter values were invalid: Duplicate value in attribute name: %s", a)
			}
			seen[a] = true
			if err := expr.CheckNameLen(a); err != nil {
				return nil, err
			}
		}
		return expr.FromAttributesToGet(atg), nil
	}
	return nil, nil
}

// getItemWire is GetItem as the wire protocol serves it (GetItemInput.wire).
func (s *Store) getItemWire(in *GetItemInput) (*GetItemOutput, error) {
	in.wire = true
	return s.GetItem(in)
}

// GetItem reads one item by key.
func (s *Store) GetItem(in *GetItemInput) (*GetItemOutput, error) {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	if in.Key == nil {
		c.add("Value null at 'key' failed to satisfy constraint: Member must not be null")
	}
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if err := c.err(); err != nil {
		return nil, err
	}
	p, perr := params(in.exprInput, in.ProjectionExpression != nil)
	if perr != nil {
		return nil, perr
	}
	proj, err := readProjection(in.ProjectionExpression, in.AttributesToGet, p)
	if err != nil {
		return nil, err
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	t, terr := s.table(*in.TableName)
	if terr != nil {
		return nil, terr
	}
	if err := t.validateKey(in.Key); err != nil {
		return nil, err
	}
	if in.wire && proj == nil {
		// The item goes out as stored: transcode it without decoding it.
		itemJSON, size, err := s.getItemJSON(t.itemKey(in.Key))
		if err != nil {
			return nil, internal(t.named(err))
		}
		cc := readCapacity(t, in.ReturnConsumedCapacity, size, in.ConsistentRead)
		return &GetItemOutput{itemJSON: itemJSON, ConsumedCapacity: cc}, nil
	}
	item, gerr := s.getItem(t.itemKey(in.Key))
	if gerr != nil {
		return nil, internal(t.named(gerr))
	}
	cc := readCapacity(t, in.ReturnConsumedCapacity, itemSize(item), in.ConsistentRead)
	if item != nil && proj != nil {
		item = proj.Apply(item)
		if item == nil {
			item = attr.Item{}
		}
	}
	out := &GetItemOutput{Item: item, ConsumedCapacity: cc}
	return out, nil
}

// DeleteItem deletes one item by key.
func (s *Store) DeleteItem(in *DeleteItemInput) (*ItemOutput, error) {
	if err := in.check("key", in.Key == nil, "ALL_OLD"); err != nil {
		return nil, err
	}
	cond, err := in.condition()
	if err != nil {
		return nil, err
	}
	t, unlock, terr := s.writeTable(*in.TableName)
	if terr != nil {
		return nil, terr
	}
	defer unlock()
	if err := t.validateKey(in.Key); err != nil {
		return nil, err
	}
	old, _, err := s.applyWrite(t, t.itemKey(in.Key), cond, in.ReturnValuesOnConditionCheckFailure, true,
		func(attr.Item) (attr.Item, error) { return nil, nil })
	if err != nil {
		return nil, err
	}
	out := &ItemOutput{ConsumedCapacity: writeCapacity(t, in.ReturnConsumedCapacity, old, nil),
		ItemCollectionMetrics: s.itemCollectionMetrics(t, in.ReturnItemCollectionMetrics, in.Key)}
	if in.ReturnValues == "ALL_OLD" {
		out.Attributes = old
	}
	return out, nil
}

// UpdateItem edits (or creates) one item with an update expression.
func (s *Store) UpdateItem(in *UpdateItemInput) (*ItemOutput, error) {
	if err := in.check("key", in.Key == nil, "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"); err != nil {
		return nil, err
	}
	legacy := present("AttributeUpdates", in.AttributeUpdates != nil, "Expected", in.Expected != nil)
	exprs := present("UpdateExpression", in.UpdateExpression != nil, "ConditionExpression", in.ConditionExpression != nil)
	if len(legacy) > 0 && len(exprs) > 0 {
		return nil, mixErr(legacy, exprs)
	}
	p, perr := params(in.exprInput, len(exprs) > 0, "UpdateExpression", "ConditionExpression")
	if perr != nil {
		return nil, perr
	}
	if err := checkValuesNesting(in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	var upd *expr.Update
	var err error
	if in.UpdateExpression != nil {
		upd, err = expr.ParseUpdate(*in.UpdateExpression, p)
	} else if in.AttributeUpdates != nil {
		upd, err = expr.FromAttributeUpdates(in.AttributeUpdates)
	}
	if err != nil {
		return nil, err
	}
	cond, err := writeCondition(in.ConditionExpression, in.Expected, in.ConditionalOperator, p)
	if err != nil {
		return nil, err
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	t, unlock, terr := s.writeTable(*in.TableName)
	if terr != nil {
		return nil, terr
	}
	defer unlock()
	if err := t.validateKey(in.Key); err != nil {
		return nil, err
	}
	var paths []expr.Path
	if upd != nil {
		paths = upd.Paths()
		for _, path := range paths {
			if len(path) > 0 && t.isKeyAttr(path[0].Name) {
				return nil, invalidParam("Cannot update attribute %s. This attribute is part of the key", path[0].Name)
			}
		}
	}
	old, newItem, err := s.applyWrite(t, t.itemKey(in.Key), cond, in.ReturnValuesOnConditionCheckFailure, false, func(old attr.Item) (attr.Item, error) {
		if old == nil && upd.OnlyRemoves() {
			return nil, nil // nothing to remove from: no item is created
		}
		base := old
		if base == nil {
			base = t.keyOf(in.Key)
		}
		next := base
		if upd == nil {
			next = base.Clone()
		} else {
			var err error
			if next, err = upd.Apply(base); err != nil {
				return nil, err
			}
		}
		if err := t.validateItem(next); err != nil {
			return nil, err
		}
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	out := &ItemOutput{ConsumedCapacity: writeCapacity(t, in.ReturnConsumedCapacity, old, newItem),
		ItemCollectionMetrics: s.itemCollectionMetrics(t, in.ReturnItemCollectionMetrics, in.Key)}
	switch in.ReturnValues {
	case "ALL_OLD":
		out.Attributes = old
	case "ALL_NEW":
		out.Attributes = newItem
	case "UPDATED_OLD":
		if old != nil {
			out.Attributes = nilIfEmpty(expr.Projection(topPaths(paths)).Apply(old))
		}
	case "UPDATED_NEW":
		out.Attributes = nilIfEmpty(expr.Projection(topPaths(paths)).Apply(newItem))
	}
	return out, nil
}

// topPaths removes duplicate paths so a projection over them is valid.
func topPaths(paths []expr.Path) []expr.Path {
	sort.SliceStable(paths, func(i, j int) bool { return len(paths[i]) < len(paths[j]) })
	var out []expr.Path
	for _, p := range paths {
		covered := false
		for _, q := range out {
			if isPrefixPath(q, p) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

func isPrefixPath(q, p expr.Path) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if q[i] != p[i] {
			return false
		}
	}
	return true
}
