package ddb

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

// Transactions: TransactWriteItems and TransactGetItems.
//
// A write transaction validates every action, then takes the DDL read lock
// of every table it touches (in name order, as BatchWriteItem does) and the
// item locks of every item in one lockKeys call, so it serializes with every
// other write of those items. It reads the items, evaluates every condition
// and update, and either commits all its writes in one Pebble batch or
// writes nothing and answers TransactionCanceledException with a reason per
// action, in request order.
//
// A read transaction reads all its items from one Pebble snapshot, so it
// sees every transaction (and every other write) entirely or not at all.

const (
	maxTransactItems = 100
	maxTransactBytes = 4 << 20
	maxTokenLength   = 36
	// tokenWindow is how long a ClientRequestToken stays idempotent.
	tokenWindow = 10 * time.Minute
)

// TransactAction is one Put, Update, Delete or ConditionCheck of
// TransactWriteItems (the members an action does not use are ignored).
type TransactAction struct {
	TableName                           *string   `json:"TableName"`
	Item                                attr.Item `json:"Item,omitempty"`
	Key                                 attr.Item `json:"Key,omitempty"`
	UpdateExpression                    *string   `json:"UpdateExpression,omitempty"`
	ConditionExpression                 *string   `json:"ConditionExpression,omitempty"`
	ReturnValuesOnConditionCheckFailure string    `json:"ReturnValuesOnConditionCheckFailure,omitempty"`
	exprInput
}

// TransactWriteItem is one entry of TransactWriteItems' TransactItems:
// exactly one of its members is set.
type TransactWriteItem struct {
	ConditionCheck *TransactAction `json:"ConditionCheck,omitempty"`
	Put            *TransactAction `json:"Put,omitempty"`
	Update         *TransactAction `json:"Update,omitempty"`
	Delete         *TransactAction `json:"Delete,omitempty"`
}

// TransactWriteItemsInput is the request of TransactWriteItems.
type TransactWriteItemsInput struct {
	TransactItems               []TransactWriteItem `json:"TransactItems"`
	ClientRequestToken          *string             `json:"ClientRequestToken"`
	ReturnConsumedCapacity      string              `json:"ReturnConsumedCapacity"`
	ReturnItemCollectionMetrics string              `json:"ReturnItemCollectionMetrics"`
}

// TransactWriteItemsOutput is the response of TransactWriteItems.
type TransactWriteItemsOutput struct {
	ConsumedCapacity []*ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// TransactGet is the Get of one TransactGetItems entry.
type TransactGet struct {
	TableName            *string   `json:"TableName"`
	Key                  attr.Item `json:"Key"`
	ProjectionExpression *string   `json:"ProjectionExpression"`
	exprInput
}

// TransactGetItem is one entry of TransactGetItems' TransactItems.
type TransactGetItem struct {
	Get *TransactGet `json:"Get"`
}

// TransactGetItemsInput is the request of TransactGetItems.
type TransactGetItemsInput struct {
	TransactItems          []TransactGetItem `json:"TransactItems"`
	ReturnConsumedCapacity string            `json:"ReturnConsumedCapacity"`
}

// ItemResponse is one entry of TransactGetItems' Responses; Item is absent
// when the item does not exist.
type ItemResponse struct {
	Item attr.Item `json:"Item,omitempty"`
}

// TransactGetItemsOutput is the response of TransactGetItems.
type TransactGetItemsOutput struct {
	Responses        []ItemResponse      `json:"Responses"`
	ConsumedCapacity []*ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// Cancellation reason codes.
const (
	reasonNone        = "None"
	reasonCondition   = "ConditionalCheckFailed"
	reasonValidation  = "ValidationError"
	msgKeySchema      = "The provided key element does not match the schema"
	msgItemSize       = "Item size has exceeded the maximum allowed size"
	msgUpdateItemSize = "Item size to update has exceeded the maximum allowed size"
	// msgTransactSize answers a transaction whose payload (the items, keys
	// and expression values it carries, not the stored items it refers
	// to) is over 4 MB.
	msgTransactSize = "Transaction request size cannot exceed 4 MB"
)

// transactionCanceled builds the TransactionCanceledException of reasons.
func transactionCanceled(reasons []CancellationReason) *Error {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r.Code
	}
	return &Error{
		Type:                "TransactionCanceledException",
		Message:             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		CancellationReasons: reasons,
	}
}

func validationReason(msg string) CancellationReason {
	return CancellationReason{Code: reasonValidation, Message: msg}
}

// firstInvalid is the reasons of a transaction of n actions whose action i
// is the first invalid one: DynamoDB stops validating there, so every other
// action's reason is None, even one whose condition would have failed.
func firstInvalid(n, i int, r CancellationReason) []CancellationReason {
	reasons := make([]CancellationReason, n)
	for j := range reasons {
		reasons[j] = CancellationReason{Code: reasonNone}
	}
	reasons[i] = r
	return reasons
}

// keyProblem splits a Key's validation error the way DynamoDB reports it
// in a transaction: a key that does not match the schema cancels the
// transaction with a ValidationError reason; empty or oversized key values
// are rejected up front with a ValidationException.
func keyProblem(t *table, key attr.Item) (top *Error, reason *CancellationReason) {
	err := t.validateKey(key)
	if err == nil {
		return nil, nil
	}
	if err.Message == msgKeySchema {
		r := validationReason(err.Message)
		return nil, &r
	}
	return err, nil
}

// itemProblem does the same for the Item of a Put: a missing or mistyped
// key attribute (of the table or an index) is a cancellation reason; an
// empty key value, an oversized key or item is rejected up front.
func itemProblem(t *table, item attr.Item) (top *Error, reason *CancellationReason) {
	err := t.validateItem(item)
	if err == nil {
		return nil, nil
	}
	const p = "One or more parameter values were invalid: "
	if strings.HasPrefix(err.Message, p+"Missing the key ") || strings.HasPrefix(err.Message, p+"Type mismatch for ") {
		r := validationReason(err.Message)
		return nil, &r
	}
	return err, nil
}

// action returns the member of a TransactWriteItem that is set (the first,
// when several are), with its API and wire names, and how many are set.
func (w *TransactWriteItem) action() (kind, field string, a *TransactAction, n int) {
	for _, m := range []struct {
		kind, field string
		a           *TransactAction
	}{
		{"ConditionCheck", "conditionCheck", w.ConditionCheck},
		{"Put", "put", w.Put},
		{"Update", "update", w.Update},
		{"Delete", "delete", w.Delete},
	} {
		if m.a != nil {
			if n == 0 {
				kind, field, a = m.kind, m.field, m.a
			}
			n++
		}
	}
	return kind, field, a, n
}

// describeTransactItems renders the list the way DynamoDB echoes it in a
// length constraint message.
func describeTransactItems(n int, what string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = what
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// writePlan is one validated action of a write transaction.
type writePlan struct {
	kind   string
	a      *TransactAction
	t      *table
	cond   *expr.Condition
	upd    *expr.Update
	key    []byte              // storage key; nil when the key is invalid
	reason *CancellationReason // set when the key is invalid
	old    attr.Item
	new    attr.Item // the item to write; nil for Delete and ConditionCheck
}

// TransactWriteItems applies up to 100 Put, Update, Delete and
// ConditionCheck actions atomically: all of them or none.
//
// ClientRequestToken makes the call idempotent for 10 minutes: a repeated
// call with the same token and the same parameters succeeds again without
// writing, and with other parameters fails with
// IdempotentParameterMismatchException. The token is recorded in the same
// batch as the transaction's writes, so it survives a restart or a crash
// exactly when the transaction does (clienttokens.go).
func (s *Store) TransactWriteItems(in *TransactWriteItemsInput) (*TransactWriteItemsOutput, error) {
	var c constraintErrors
	switch n := len(in.TransactItems); {
	case in.TransactItems == nil:
		c.missing("TransactItems")
	case n == 0:
		c.add("Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case n > maxTransactItems:
		c.add("Value '%s' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", describeTransactItems(n, "TransactWriteItem"), maxTransactItems)
	}
	if tok := in.ClientRequestToken; tok != nil {
		if len(*tok) < 1 {
			c.add("Value '' at 'clientRequestToken' failed to satisfy constraint: Member must have length greater than or equal to 1")
		} else if len(*tok) > maxTokenLength {
			c.add("Value '%s' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to %d", *tok, maxTokenLength)
		}
	}
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	switch in.ReturnItemCollectionMetrics {
	case "", "NONE", "SIZE":
	default:
		c.add("Value '%s' at 'returnItemCollectionMetrics' failed to satisfy constraint: Member must satisfy enum value set: [SIZE, NONE]", in.ReturnItemCollectionMetrics)
	}
	if len(in.TransactItems) <= maxTransactItems {
		for i := range in.TransactItems {
			_, field, a, n := in.TransactItems[i].action()
			if n != 1 {
				continue
			}
			at := fmt.Sprintf("transactItems.%d.member.%s", i+1, field)
			if a.TableName == nil {
				c.add("Value null at '%s.tableName' failed to satisfy constraint: Member must not be null", at)
			} else {
				checkName(&c, at+".tableName", *a.TableName)
			}
			switch {
			case field == "put" && a.Item == nil:
				c.add("Value null at '%s.item' failed to satisfy constraint: Member must not be null", at)
			case field != "put" && a.Key == nil:
				c.add("Value null at '%s.key' failed to satisfy constraint: Member must not be null", at)
			}
			if field == "update" && a.UpdateExpression == nil {
				c.add("Value null at '%s.updateExpression' failed to satisfy constraint: Member must not be null", at)
			}
			if field == "conditionCheck" && a.ConditionExpression == nil {
				c.add("Value null at '%s.conditionExpression' failed to satisfy constraint: Member must not be null", at)
			}
			switch a.ReturnValuesOnConditionCheckFailure {
			case "", "NONE", "ALL_OLD":
			default:
				c.add("Value '%s' at '%s.returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", a.ReturnValuesOnConditionCheckFailure, at)
			}
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}

	// Expressions, in request order, before any table is looked up.
	plans := make([]*writePlan, len(in.TransactItems))
	for i := range in.TransactItems {
		kind, _, a, n := in.TransactItems[i].action()
		if n != 1 {
			return nil, validationf("TransactItems can only contain one of Check, Put, Update or Delete")
		}
		pl := &writePlan{kind: kind, a: a}
		usesExpr := a.ConditionExpression != nil || kind == "Update"
		p, perr := params(a.exprInput, usesExpr, "ConditionExpression")
		if perr != nil {
			return nil, perr
		}
		var err error
		if kind == "Update" {
			if pl.upd, err = expr.ParseUpdate(*a.UpdateExpression, p); err != nil {
				return nil, err
			}
		}
		if a.ConditionExpression != nil {
			if pl.cond, err = expr.ParseCondition(expr.ConditionExpression, *a.ConditionExpression, p); err != nil {
				return nil, err
			}
		}
		if err := p.CheckUnused(); err != nil {
			return nil, err
		}
		plans[i] = pl
	}

	// Idempotency: a token seen with the same request gets the first
	// call's answer.
	var tok string
	var hash [32]byte
	if in.ClientRequestToken != nil {
		tok = *in.ClientRequestToken
		hash = requestHash(in)
		prev, err := s.txTokens.begin(s, tok, hash, s.opts.Now())
		if err != nil {
			return nil, err
		}
		if prev != nil {
			return prev, nil
		}
	}
	var out, replay *TransactWriteItemsOutput
	var expires time.Time
	var err error
	if tok != "" {
		// Deferred so that the token is released even if the transaction
		// panics (the dispatcher turns a panic into an InternalServerError).
		defer func() { s.txTokens.finish(tok, err == nil && out != nil, replay, expires) }()
	}
	out, replay, expires, err = s.transactWrite(in, plans, tok, hash)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// transactWrite runs a validated write transaction. replay is the answer a
// repeated call with the same ClientRequestToken gets; when tok is set, its
// durable record (with hash, replay and expiry expires) is committed in the
// transaction's batch.
//
// Invariants the code below relies on (tests named):
//
//   - Lock order. Locks are taken in one global order and released in
//     reverse: the ddl read lock of each table touched, once, in table-name
//     order (writeTable; BatchWriteItem does the same), then the item
//     stripes of every item at once, in stripe-index order (lockKeys). No
//     lock is taken while a later one in that order is held, so two
//     transactions over the same items or tables, in whatever order their
//     actions name them, cannot deadlock; a DDL operation holds one
//     table's ddl lock (lockDDL) and no stripe, so it cannot close a cycle
//     either (TestTransactWriteItemsOppositeOrderNoDeadlock,
//     TestTransactWriteItemsConcurrentTransfers).
//   - Nothing is applied before everything is checked. Under the locks,
//     first every action's key or item, its updated paths, the duplicate
//     items and the total size are checked (the first invalid action
//     cancels, alone with a reason); then every item is read and every
//     condition and update evaluated against it in memory. Any failure
//     returns before the batch exists: the batch (items, index entries,
//     TTL entries, change-log records, token record) is built only after
//     the last check and committed once, so a cancelled transaction leaves
//     no write behind (TestTransactWriteItemsCancellation,
//     TestTransactWriteItemsFailedConditionAppliesNothing).
//   - Reads and writes of one item see no other writer between them: the
//     stripe locks are held from the first read to the commit.
//   - Idempotency tokens. The caller claims tok before the locks
//     (clienttokens.go: a concurrent call with tok is refused, a completed one
//     replayed, another request with tok refused); the token's durable
//     record is staged in this transaction's batch, so the token is spent
//     if and only if the transaction committed, and a cancelled or failed
//     transaction frees it (TestTransactWriteItemsClientRequestToken,
//     TestTransactTokenSurvivesReopen, TestCrashKill9TransactTokens).
func (s *Store) transactWrite(in *TransactWriteItemsInput, plans []*writePlan, tok string, hash [32]byte) (out, replay *TransactWriteItemsOutput, expires time.Time, err error) {
	// Lock the tables in name order.
	names := make([]string, 0, len(plans))
	seenName := map[string]bool{}
	for _, pl := range plans {
		if n := *pl.a.TableName; !seenName[n] {
			seenName[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	tables := map[string]*table{}
	var unlocks []func()
	defer func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}()
	for _, n := range names {
		t, unlock, terr := s.writeTable(n)
		if terr != nil {
			return nil, nil, time.Time{}, terr
		}
		unlocks = append(unlocks, unlock)
		tables[n] = t
	}

	// Keys and items, in request order.
	seen := map[string]bool{}
	var keys [][]byte
	size := 0
	for _, pl := range plans {
		t := tables[*pl.a.TableName]
		pl.t = t
		var top *Error
		var keyItem attr.Item
		if pl.kind == "Put" {
			top, pl.reason = itemProblem(t, pl.a.Item)
			keyItem = pl.a.Item
			size += pl.a.Item.Size()
		} else {
			top, pl.reason = keyProblem(t, pl.a.Key)
			keyItem = pl.a.Key
			size += pl.a.Key.Size()
		}
		for _, v := range pl.a.ExpressionAttributeValues {
			size += v.Size()
		}
		if top != nil {
			return nil, nil, time.Time{}, top
		}
		if pl.upd != nil {
			for _, path := range pl.upd.Paths() {
				if len(path) > 0 && t.isKeyAttr(path[0].Name) {
					return nil, nil, time.Time{}, invalidParam("Cannot update attribute %s. This attribute is part of the key", path[0].Name)
				}
			}
		}
		if pl.reason != nil {
			continue
		}
		pl.key = t.itemKey(keyItem)
		if seen[string(pl.key)] {
			return nil, nil, time.Time{}, validationf("Transaction request cannot include multiple operations on one item")
		}
		seen[string(pl.key)] = true
		keys = append(keys, pl.key)
	}
	if size > maxTransactBytes {
		return nil, nil, time.Time{}, validationf("%s", msgTransactSize)
	}
	// DynamoDB validates the actions before it evaluates any of them and
	// stops at the first invalid one: only that one has a reason.
	for i, pl := range plans {
		if pl.reason != nil {
			return nil, nil, time.Time{}, transactionCanceled(firstInvalid(len(plans), i, *pl.reason))
		}
	}

	defer s.lockKeys(keys...)()
	reasons := make([]CancellationReason, len(plans))
	failed := false
	for i, pl := range plans {
		reasons[i] = CancellationReason{Code: reasonNone}
		old, gerr := s.getItem(pl.key)
		if gerr != nil {
			return nil, nil, time.Time{}, internal(pl.t.named(gerr))
		}
		pl.old = old
		if pl.cond != nil && !pl.cond.Eval(old) {
			reasons[i] = CancellationReason{Code: reasonCondition, Message: "The conditional request failed"}
			if pl.a.ReturnValuesOnConditionCheckFailure == "ALL_OLD" && old != nil {
				reasons[i].Item = old
			}
			failed = true
			continue
		}
		switch pl.kind {
		case "Put":
			pl.new = pl.a.Item
		case "Update":
			if old == nil && pl.upd.OnlyRemoves() {
				continue // nothing to remove from: no item is created
			}
			base := old
			if base == nil {
				base = pl.t.keyOf(pl.a.Key)
			}
			n, aerr := pl.upd.Apply(base)
			if aerr != nil {
				return nil, nil, time.Time{}, transactionCanceled(firstInvalid(len(plans), i, validationReason(asAPIError(aerr).Message)))
			}
			if verr := pl.t.validateItem(n); verr != nil {
				msg := verr.Message
				if msg == msgItemSize {
					msg = msgUpdateItemSize
				}
				return nil, nil, time.Time{}, transactionCanceled(firstInvalid(len(plans), i, validationReason(msg)))
			}
			pl.new = n
		}
	}
	if failed {
		return nil, nil, time.Time{}, transactionCanceled(reasons)
	}

	b := s.newBatch()
	defer b.release(s)
	var caps, reads tableCapacities
	for _, pl := range plans {
		c, r := caps.of(pl.t), reads.of(pl.t)
		switch pl.kind {
		case "ConditionCheck":
			c.units += 2 * blocks(itemSize(pl.old), writeUnitBytes)
			r.units += 2 * blocks(itemSize(pl.old), readUnitBytes)
			continue
		case "Delete":
			r.units += 2 * blocks(itemSize(pl.old), readUnitBytes)
		default:
			r.units += 2 * blocks(itemSize(pl.new), readUnitBytes)
		}
		c.addWrite(pl.t, pl.old, pl.new, 2)
		if pl.old == nil && pl.new == nil {
			continue
		}
		s.stageWrite(b, pl.t, pl.key, pl.old, pl.new)
	}
	out = &TransactWriteItemsOutput{ConsumedCapacity: caps.consumed(in.ReturnConsumedCapacity, splitWrite)}
	replay = &TransactWriteItemsOutput{ConsumedCapacity: reads.consumed(in.ReturnConsumedCapacity, splitRead)}
	if tok != "" {
		expires = tokenExpiry(s.opts.Now())
		stageToken(b, tok, &tokenRecord{hash: hash, expires: expires, replay: replay})
	}
	if err := s.commit(b); err != nil {
		return nil, nil, time.Time{}, internal(err)
	}
	return out, replay, expires, nil
}

// requestHash identifies a TransactWriteItems request for idempotency:
// every parameter but the token.
func requestHash(in *TransactWriteItemsInput) [32]byte {
	cp := *in
	cp.ClientRequestToken = nil
	b, err := json.Marshal(&cp)
	if err != nil {
		panic(fmt.Sprintf("ddb: encode transaction: %v", err)) // items always marshal
	}
	return sha256.Sum256(b)
}

// TransactGetItems reads up to 100 items atomically: the items are read
// from one snapshot of the store.
func (s *Store) TransactGetItems(in *TransactGetItemsInput) (*TransactGetItemsOutput, error) {
	var c constraintErrors
	switch n := len(in.TransactItems); {
	case in.TransactItems == nil:
		c.missing("TransactItems")
	case n == 0:
		c.add("Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case n > maxTransactItems:
		c.add("Value '%s' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", describeTransactItems(n, "TransactGetItem"), maxTransactItems)
	}
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if len(in.TransactItems) <= maxTransactItems {
		for i, ti := range in.TransactItems {
			at := fmt.Sprintf("transactItems.%d.member.get", i+1)
			g := ti.Get
			if g == nil {
				c.add("Value null at '%s' failed to satisfy constraint: Member must not be null", at)
				continue
			}
			if g.TableName == nil {
				c.add("Value null at '%s.tableName' failed to satisfy constraint: Member must not be null", at)
			} else {
				checkName(&c, at+".tableName", *g.TableName)
			}
			if g.Key == nil {
				c.add("Value null at '%s.key' failed to satisfy constraint: Member must not be null", at)
			}
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	projs := make([]expr.Projection, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		g := ti.Get
		p, perr := params(g.exprInput, g.ProjectionExpression != nil)
		if perr != nil {
			return nil, perr
		}
		proj, err := readProjection(g.ProjectionExpression, nil, p)
		if err != nil {
			return nil, err
		}
		if err := p.CheckUnused(); err != nil {
			return nil, err
		}
		projs[i] = proj
	}
	tabs := make([]*table, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		t, terr := s.table(*ti.Get.TableName)
		if terr != nil {
			return nil, terr
		}
		tabs[i] = t
	}
	keys := make([][]byte, len(in.TransactItems))
	reasons := make([]CancellationReason, len(in.TransactItems))
	failed := false
	seen := map[string]bool{}
	for i, ti := range in.TransactItems {
		reasons[i] = CancellationReason{Code: reasonNone}
		top, reason := keyProblem(tabs[i], ti.Get.Key)
		if top != nil {
			return nil, top
		}
		if reason != nil {
			reasons[i], failed = *reason, true
			continue
		}
		keys[i] = tabs[i].itemKey(ti.Get.Key)
		if seen[string(keys[i])] {
			return nil, validationf("Transaction request cannot include multiple operations on one item")
		}
		seen[string(keys[i])] = true
	}
	if failed {
		return nil, transactionCanceled(reasons)
	}

	snap := s.db.NewSnapshot()
	defer snap.Close()
	out := &TransactGetItemsOutput{Responses: make([]ItemResponse, len(in.TransactItems))}
	var caps tableCapacities
	size := 0
	for i, k := range keys {
		item, err := readItem(snap, k)
		if err != nil {
			return nil, internal(tabs[i].named(err))
		}
		caps.of(tabs[i]).units += 2 * blocks(itemSize(item), readUnitBytes)
		size += itemSize(item)
		if item != nil && projs[i] != nil {
			item = projs[i].Apply(item)
		}
		out.Responses[i].Item = item
	}
	if size > maxTransactBytes {
		return nil, validationf("Transaction request cannot be larger than 4 MB")
	}
	out.ConsumedCapacity = caps.consumed(in.ReturnConsumedCapacity, splitRead)
	return out, nil
}
