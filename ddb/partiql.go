package ddb

// PartiQL: ExecuteStatement, BatchExecuteStatement and ExecuteTransaction.
// Statements are parsed by ddb/partiql and translated into the inputs of the
// item operations (GetItem-style Query, Scan, PutItem, UpdateItem,
// DeleteItem, TransactWriteItems, TransactGetItems): conditions become
// expressions with generated #name / :value placeholders.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
	"github.com/quarrydb/quarry/ddb/partiql"
)

// ExecuteStatementInput is the request of ExecuteStatement.
type ExecuteStatementInput struct {
	Statement                           *string      `json:"Statement"`
	Parameters                          []attr.Value `json:"Parameters"`
	ConsistentRead                      *bool        `json:"ConsistentRead"`
	NextToken                           *string      `json:"NextToken"`
	Limit                               *int64       `json:"Limit"`
	ReturnConsumedCapacity              string       `json:"ReturnConsumedCapacity"`
	ReturnValuesOnConditionCheckFailure string       `json:"ReturnValuesOnConditionCheckFailure"`
}

// ExecuteStatementOutput is the response of ExecuteStatement.
type ExecuteStatementOutput struct {
	Items            []attr.Item       `json:"Items"`
	NextToken        string            `json:"NextToken,omitempty"`
	LastEvaluatedKey attr.Item         `json:"LastEvaluatedKey,omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// BatchStatementRequest is one statement of BatchExecuteStatement.
type BatchStatementRequest struct {
	Statement                           *string      `json:"Statement"`
	Parameters                          []attr.Value `json:"Parameters"`
	ConsistentRead                      *bool        `json:"ConsistentRead"`
	ReturnValuesOnConditionCheckFailure string       `json:"ReturnValuesOnConditionCheckFailure"`
}

// BatchExecuteStatementInput is the request of BatchExecuteStatement.
type BatchExecuteStatementInput struct {
	Statements             []BatchStatementRequest `json:"Statements"`
	ReturnConsumedCapacity string                  `json:"ReturnConsumedCapacity"`
}

// BatchStatementError is the error of one statement of a batch.
type BatchStatementError struct {
	Code    string    `json:"Code"`
	Message string    `json:"Message,omitempty"`
	Item    attr.Item `json:"Item,omitempty"`
}

// BatchStatementResponse is one entry of BatchExecuteStatement's Responses.
type BatchStatementResponse struct {
	TableName string               `json:"TableName,omitempty"`
	Item      attr.Item            `json:"Item,omitempty"`
	Error     *BatchStatementError `json:"Error,omitempty"`
}

// BatchExecuteStatementOutput is the response of BatchExecuteStatement.
type BatchExecuteStatementOutput struct {
	Responses        []BatchStatementResponse `json:"Responses"`
	ConsumedCapacity []*ConsumedCapacity      `json:"ConsumedCapacity,omitempty"`
}

// ParameterizedStatement is one statement of ExecuteTransaction.
type ParameterizedStatement struct {
	Statement                           *string      `json:"Statement"`
	Parameters                          []attr.Value `json:"Parameters"`
	ReturnValuesOnConditionCheckFailure string       `json:"ReturnValuesOnConditionCheckFailure"`
}

// ExecuteTransactionInput is the request of ExecuteTransaction.
type ExecuteTransactionInput struct {
	TransactStatements     []ParameterizedStatement `json:"TransactStatements"`
	ClientRequestToken     *string                  `json:"ClientRequestToken"`
	ReturnConsumedCapacity string                   `json:"ReturnConsumedCapacity"`
}

// ExecuteTransactionOutput is the response of ExecuteTransaction.
type ExecuteTransactionOutput struct {
	Responses        []ItemResponse      `json:"Responses,omitempty"`
	ConsumedCapacity []*ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// parseStatement parses a statement, reporting syntax errors as
// ValidationExceptions.
func parseStatement(stmt *string, params []attr.Value) (partiql.Statement, error) {
	if stmt == nil {
		return nil, validationf("1 validation error detected: Value null at 'statement' failed to satisfy constraint: Member must not be null")
	}
	if len(*stmt) == 0 || len(*stmt) > 8192 {
		return nil, validationf("1 validation error detected: Value at 'statement' failed to satisfy constraint: Member must have length between 1 and 8192")
	}
	st, err := partiql.Parse(*stmt, params)
	if err != nil {
		var pe *partiql.Error
		if errors.As(err, &pe) {
			return nil, validationf("%s", pe.Message)
		}
		return nil, err
	}
	return st, nil
}

func statementTable(st partiql.Statement) string {
	switch st := st.(type) {
	case *partiql.Select:
		return st.Table
	case *partiql.Insert:
		return st.Table
	case *partiql.Update:
		return st.Table
	case *partiql.Delete:
		return st.Table
	case *partiql.Exists:
		return st.Select.Table
	}
	return ""
}

// exprBuilder renders PartiQL conditions and values as DynamoDB expressions
// with generated placeholders.
type exprBuilder struct {
	names  map[string]string // attribute name → #placeholder
	eav    map[string]attr.Value
	values int
}

func (b *exprBuilder) name(n string) string {
	if b.names == nil {
		b.names = map[string]string{}
	}
	if ph, ok := b.names[n]; ok {
		return ph
	}
	ph := fmt.Sprintf("#n%d", len(b.names))
	b.names[n] = ph
	return ph
}

func (b *exprBuilder) value(v attr.Value) string {
	if b.eav == nil {
		b.eav = map[string]attr.Value{}
	}
	ph := fmt.Sprintf(":v%d", b.values)
	b.values++
	b.eav[ph] = v
	return ph
}

func (b *exprBuilder) path(p expr.Path) string {
	var sb strings.Builder
	for i, e := range p {
		switch {
		case e.IsIndex:
			fmt.Fprintf(&sb, "[%d]", e.Index)
		case i > 0:
			sb.WriteString("." + b.name(e.Name))
		default:
			sb.WriteString(b.name(e.Name))
		}
	}
	return sb.String()
}

// input returns the ExpressionAttributeNames/Values of everything rendered.
func (b *exprBuilder) input() exprInput {
	var in exprInput
	if len(b.names) > 0 {
		in.ExpressionAttributeNames = map[string]string{}
		for n, ph := range b.names {
			in.ExpressionAttributeNames[ph] = n
		}
	}
	in.ExpressionAttributeValues = b.eav
	return in
}

func unsupported(format string, args ...any) *Error {
	return validationf("Statement wasn't well formed, can't be processed: "+format, args...)
}

// operand renders a condition operand: a path, a value or size(path).
func (b *exprBuilder) operand(o partiql.Operand) (string, error) {
	switch o := o.(type) {
	case *partiql.PathOp:
		return b.path(o.Path), nil
	case *partiql.Literal:
		return b.value(o.Value), nil
	case *partiql.Call:
		if o.Name == "size" {
			p, ok := o.Args[0].(*partiql.PathOp)
			if !ok {
				return "", unsupported("size takes an attribute path")
			}
			return "size(" + b.path(p.Path) + ")", nil
		}
		return "", unsupported("function %s is not supported in a condition", o.Name)
	}
	return "", unsupported("arithmetic is not supported in a condition")
}

func (b *exprBuilder) cond(c partiql.Cond) (string, error) {
	switch c := c.(type) {
	case *partiql.Compare:
		ops, err := b.operands(c.L, c.R)
		if err != nil {
			return "", err
		}
		return ops[0] + " " + c.Op + " " + ops[1], nil
	case *partiql.Between:
		ops, err := b.operands(c.X, c.Lo, c.Hi)
		if err != nil {
			return "", err
		}
		return ops[0] + " BETWEEN " + ops[1] + " AND " + ops[2], nil
	case *partiql.In:
		ops, err := b.operands(append([]partiql.Operand{c.X}, c.List...)...)
		if err != nil {
			return "", err
		}
		return ops[0] + " IN (" + strings.Join(ops[1:], ", ") + ")", nil
	case *partiql.Logic:
		l, err := b.cond(c.L)
		if err != nil {
			return "", err
		}
		r, err := b.cond(c.R)
		if err != nil {
			return "", err
		}
		return "(" + l + ") " + c.Op + " (" + r + ")", nil
	case *partiql.Not:
		x, err := b.cond(c.X)
		if err != nil {
			return "", err
		}
		return "NOT (" + x + ")", nil
	case *partiql.Func:
		ops, err := b.operands(c.Args...)
		if err != nil {
			return "", err
		}
		return c.Name + "(" + strings.Join(ops, ", ") + ")", nil
	case *partiql.Missing:
		if c.Not {
			return "attribute_exists(" + b.path(c.Path) + ")", nil
		}
		return "attribute_not_exists(" + b.path(c.Path) + ")", nil
	}
	return "", unsupported("unsupported condition")
}

func (b *exprBuilder) operands(os ...partiql.Operand) ([]string, error) {
	out := make([]string, len(os))
	for i, o := range os {
		s, err := b.operand(o)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// conds renders conjuncts joined by AND ("" when there are none).
// existsAnd returns the condition that t's item exists and that cs hold.
func (b *exprBuilder) existsAnd(t *table, cs []partiql.Cond) (string, error) {
	cond := "attribute_exists(" + b.name(t.hash.Name) + ")"
	if len(cs) == 0 {
		return cond, nil
	}
	extra, err := b.conds(cs)
	if err != nil {
		return "", err
	}
	return cond + " AND " + extra, nil
}

func (b *exprBuilder) conds(cs []partiql.Cond) (string, error) {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		s, err := b.cond(c)
		if err != nil {
			return "", err
		}
		parts = append(parts, "("+s+")")
	}
	return strings.Join(parts, " AND "), nil
}

// setValue renders the value of an UPDATE's SET.
func (b *exprBuilder) setValue(o partiql.Operand) (string, error) {
	switch o := o.(type) {
	case *partiql.Arith:
		l, err := b.setValue(o.L)
		if err != nil {
			return "", err
		}
		r, err := b.setValue(o.R)
		if err != nil {
			return "", err
		}
		return l + " " + o.Op + " " + r, nil
	case *partiql.Call:
		switch o.Name {
		case "list_append", "if_not_exists":
			a, err := b.setValue(o.Args[0])
			if err != nil {
				return "", err
			}
			c, err := b.setValue(o.Args[1])
			if err != nil {
				return "", err
			}
			return o.Name + "(" + a + ", " + c + ")", nil
		}
		return "", unsupported("function %s is not supported in SET", o.Name)
	}
	return b.operand(o)
}

// update renders an UPDATE's actions as an UpdateExpression.
func (b *exprBuilder) update(actions []partiql.Action) (string, error) {
	var set, remove, add, del []string
	for _, a := range actions {
		p := b.path(a.Path)
		if a.Remove {
			remove = append(remove, p)
			continue
		}
		if c, ok := a.Value.(*partiql.Call); ok && (c.Name == "set_add" || c.Name == "set_delete") {
			target, ok := c.Args[0].(*partiql.PathOp)
			lit, lok := c.Args[1].(*partiql.Literal)
			if !ok || !lok || !target.Path.Equal(a.Path) {
				return "", unsupported("%s must be applied to the attribute being set, with a set value", c.Name)
			}
			clause := p + " " + b.value(lit.Value)
			if c.Name == "set_add" {
				add = append(add, clause)
			} else {
				del = append(del, clause)
			}
			continue
		}
		v, err := b.setValue(a.Value)
		if err != nil {
			return "", err
		}
		set = append(set, p+" = "+v)
	}
	var parts []string
	for _, c := range []struct {
		kw  string
		cls []string
	}{{"SET", set}, {"REMOVE", remove}, {"ADD", add}, {"DELETE", del}} {
		if len(c.cls) > 0 {
			parts = append(parts, c.kw+" "+strings.Join(c.cls, ", "))
		}
	}
	return strings.Join(parts, " "), nil
}

// keyCompare reports whether c compares the top-level attribute name with
// a value, returning the operator as if the attribute were on the left.
func keyCompare(c partiql.Cond, name string) (op string, v attr.Value, ok bool) {
	cmp, isCmp := c.(*partiql.Compare)
	if !isCmp {
		return "", attr.Value{}, false
	}
	isName := func(o partiql.Operand) bool {
		p, ok := o.(*partiql.PathOp)
		return ok && len(p.Path) == 1 && p.Path[0].Name == name
	}
	if l, isLit := cmp.R.(*partiql.Literal); isLit && isName(cmp.L) {
		return cmp.Op, l.Value, true
	}
	if l, isLit := cmp.L.(*partiql.Literal); isLit && isName(cmp.R) {
		flip := map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
		return flip[cmp.Op], l.Value, true
	}
	return "", attr.Value{}, false
}

// pinKey takes equality conditions on every key attribute out of the
// conjuncts: the item's key and the remaining conditions.
func pinKey(conj []partiql.Cond, keys []keyDef) (attr.Item, []partiql.Cond, bool) {
	key := attr.Item{}
	rest := append([]partiql.Cond(nil), conj...)
	for _, k := range keys {
		found := false
		for i, c := range rest {
			if op, v, ok := keyCompare(c, k.Name); ok && op == "=" {
				key[k.Name] = v
				rest = append(rest[:i], rest[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			return nil, nil, false
		}
	}
	return key, rest, true
}

func (s *Store) statementTable(name string) (*table, error) {
	t, ok := s.tableExists(name)
	if !ok {
		return nil, tableNotFound()
	}
	return t, nil
}

// keyedTable resolves the table of an UPDATE, DELETE or EXISTS and the key
// its WHERE clause pins; rest are its other conditions.
func (s *Store) keyedTable(name string, where partiql.Cond) (t *table, key attr.Item, rest []partiql.Cond, err error) {
	if t, err = s.statementTable(name); err != nil {
		return nil, nil, nil, err
	}
	key, rest, ok := pinKey(partiql.Conjuncts(where), t.keyDefs())
	if !ok {
		return nil, nil, nil, missingKeyEquality()
	}
	return t, key, rest, nil
}

func missingKeyEquality() *Error {
	return validationf("Where clause does not contain a mandatory equality on all key attributes")
}

// writeAction is a translated INSERT, UPDATE or DELETE.
type writeAction struct {
	kind   string // "Put", "Update", "Delete"
	table  string
	insert bool
	// returnValues is the RETURNING clause as ReturnValues ("" for none).
	returnValues string
	action       TransactAction
}

func (s *Store) translateWrite(st partiql.Statement) (*writeAction, error) {
	var b exprBuilder
	w := &writeAction{}
	switch st := st.(type) {
	case *partiql.Insert:
		t, err := s.statementTable(st.Table)
		if err != nil {
			return nil, err
		}
		w.kind, w.table, w.insert = "Put", st.Table, true
		w.action.Item = st.Item
		cond := "attribute_not_exists(" + b.name(t.hash.Name) + ")"
		w.action.ConditionExpression = &cond
	case *partiql.Update:
		t, key, rest, err := s.keyedTable(st.Table, st.Where)
		if err != nil {
			return nil, err
		}
		w.kind, w.table, w.returnValues = "Update", st.Table, st.Returning
		w.action.Key = key
		ue, err := b.update(st.Actions)
		if err != nil {
			return nil, err
		}
		w.action.UpdateExpression = &ue
		cond, err := b.existsAnd(t, rest)
		if err != nil {
			return nil, err
		}
		w.action.ConditionExpression = &cond
	case *partiql.Delete:
		_, key, rest, err := s.keyedTable(st.Table, st.Where)
		if err != nil {
			return nil, err
		}
		w.kind, w.table, w.returnValues = "Delete", st.Table, st.Returning
		w.action.Key = key
		if len(rest) > 0 {
			cond, err := b.conds(rest)
			if err != nil {
				return nil, err
			}
			w.action.ConditionExpression = &cond
		}
	case *partiql.Exists:
		sel := st.Select
		if sel.Index != "" || sel.Paths != nil {
			return nil, unsupported("EXISTS must select * from a table")
		}
		t, key, rest, err := s.keyedTable(sel.Table, sel.Where)
		if err != nil {
			return nil, err
		}
		w.kind, w.table = "ConditionCheck", sel.Table
		w.action.Key = key
		cond, err := b.existsAnd(t, rest)
		if err != nil {
			return nil, err
		}
		w.action.ConditionExpression = &cond
	default:
		return nil, validationf("not a write statement")
	}
	w.action.TableName = &w.table
	w.action.exprInput = b.input()
	// The literals of an INSERT or UPDATE are checked as the statement is
	// read, in a transaction too (whose Update values TransactWriteItems
	// would not check).
	if err := checkNesting(w.action.Item); err != nil {
		return nil, err
	}
	if err := checkValuesNesting(w.action.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	return w, nil
}

func duplicateItem() *Error {
	return &Error{Type: "DuplicateItemException", Message: "Duplicate primary key exists in table"}
}

// execWrite runs a translated write as a single-item operation.
func (s *Store) execWrite(w *writeAction, rcc, rvOnFailure string) (*ItemOutput, error) {
	wi := writeInput{
		TableName:                           w.action.TableName,
		ConditionExpression:                 w.action.ConditionExpression,
		ReturnValuesOnConditionCheckFailure: rvOnFailure,
		ReturnConsumedCapacity:              rcc,
		ReturnValues:                        w.returnValues,
		exprInput:                           w.action.exprInput,
	}
	var out *ItemOutput
	var err error
	switch w.kind {
	case "Put":
		out, err = s.PutItem(&PutItemInput{Item: w.action.Item, writeInput: wi})
		if err != nil && errors.Is(err, ErrConditionalCheckFailed) {
			return nil, duplicateItem()
		}
	case "Update":
		out, err = s.UpdateItem(&UpdateItemInput{Key: w.action.Key, UpdateExpression: w.action.UpdateExpression, writeInput: wi})
	case "Delete":
		out, err = s.DeleteItem(&DeleteItemInput{Key: w.action.Key, writeInput: wi})
	}
	return out, err
}

// selectPlan is a translated SELECT: a Query or a Scan.
type selectPlan struct {
	query   bool
	in      QueryInput
	paths   []expr.Path
	fullKey bool      // the key conditions pin one item of the table
	key     attr.Item // that item's key
	// post is the part of the WHERE a Query cannot filter on (conditions
	// on its key attributes beyond the key condition), evaluated here.
	post *expr.Condition
	// hashValues, for WHERE pk IN [...], are the partition keys to Query in
	// turn, each bound to the placeholder hashPH.
	hashValues []attr.Value
	hashPH     string
}

// maxInKeys bounds the partition keys of one SELECT's IN.
const maxInKeys = 50

// keyIn reports whether c is name IN [values...], returning the distinct
// values.
func keyIn(c partiql.Cond, name string) ([]attr.Value, bool) {
	in, ok := c.(*partiql.In)
	if !ok {
		return nil, false
	}
	p, ok := in.X.(*partiql.PathOp)
	if !ok || len(p.Path) != 1 || p.Path[0].Name != name || len(in.List) > maxInKeys {
		return nil, false
	}
	var vals []attr.Value
	seen := map[string]bool{}
	for _, o := range in.List {
		l, ok := o.(*partiql.Literal)
		if !ok {
			return nil, false
		}
		k := string(attr.Item{"v": l.Value}.AppendBinary(nil))
		if !seen[k] {
			seen[k] = true
			vals = append(vals, l.Value)
		}
	}
	return vals, true
}

// condNames returns the top-level attribute names c refers to.
func condNames(c partiql.Cond) map[string]bool {
	names := map[string]bool{}
	var op func(o partiql.Operand)
	op = func(o partiql.Operand) {
		switch o := o.(type) {
		case *partiql.PathOp:
			names[o.Path[0].Name] = true
		case *partiql.Call:
			for _, a := range o.Args {
				op(a)
			}
		case *partiql.Arith:
			op(o.L)
			op(o.R)
		}
	}
	var walk func(c partiql.Cond)
	walk = func(c partiql.Cond) {
		switch c := c.(type) {
		case *partiql.Compare:
			op(c.L)
			op(c.R)
		case *partiql.Between:
			op(c.X)
			op(c.Lo)
			op(c.Hi)
		case *partiql.In:
			op(c.X)
			for _, o := range c.List {
				op(o)
			}
		case *partiql.Logic:
			walk(c.L)
			walk(c.R)
		case *partiql.Not:
			walk(c.X)
		case *partiql.Func:
			for _, a := range c.Args {
				op(a)
			}
		case *partiql.Missing:
			names[c.Path[0].Name] = true
		}
	}
	walk(c)
	return names
}

func (s *Store) translateSelect(st *partiql.Select) (*selectPlan, error) {
	t, err := s.statementTable(st.Table)
	if err != nil {
		return nil, err
	}
	hash, rng := t.hash, t.rng
	pl := &selectPlan{paths: st.Paths}
	pl.in.TableName = &st.Table
	if st.Index != "" {
		ix := st.Index
		pl.in.IndexName = &ix
		found := false
		for _, x := range t.indexes {
			if x.meta.Name == st.Index {
				hash, rng, found = x.hash, x.rng, true
			}
		}
		if !found {
			return nil, validationf("The table does not have the specified index: %s", st.Index)
		}
	}
	var b exprBuilder
	rest := partiql.Conjuncts(st.Where)
	var keyConds []string
	for i, c := range rest {
		if op, v, ok := keyCompare(c, hash.Name); ok && op == "=" {
			keyConds = append(keyConds, b.name(hash.Name)+" = "+b.value(v))
			pl.key = attr.Item{hash.Name: v}
			rest = append(rest[:i:i], rest[i+1:]...)
			break
		}
	}
	if len(keyConds) == 0 {
		// pk IN [...] runs one Query per value.
		for i, c := range rest {
			if vals, ok := keyIn(c, hash.Name); ok {
				ph := b.value(vals[0])
				keyConds = append(keyConds, b.name(hash.Name)+" = "+ph)
				pl.hashPH, pl.hashValues = ph, vals
				pl.key = attr.Item{}
				rest = append(rest[:i:i], rest[i+1:]...)
				break
			}
		}
	}
	if len(keyConds) > 0 && rng != nil {
		for i, c := range rest {
			kc, eq := sortKeyCondition(&b, c, rng.Name)
			if kc != "" {
				if eq {
					_, v, _ := keyCompare(c, rng.Name)
					pl.key[rng.Name] = v
				}
				keyConds = append(keyConds, kc)
				rest = append(rest[:i:i], rest[i+1:]...)
				pl.fullKey = eq && st.Index == ""
				break
			}
		}
	} else if len(keyConds) > 0 {
		pl.fullKey = st.Index == ""
	}
	if pl.hashValues != nil {
		pl.fullKey = false
	}
	if st.OrderBy != "" {
		if len(keyConds) == 0 || pl.hashValues != nil {
			return nil, validationf("ORDER BY requires a WHERE clause with an equality on the partition key")
		}
		if st.OrderBy != hash.Name && (rng == nil || st.OrderBy != rng.Name) {
			return nil, validationf("ORDER BY supports only the key attributes of the table or index: %s", st.OrderBy)
		}
		forward := !st.Desc
		pl.in.ScanIndexForward = &forward
	}
	if len(keyConds) > 0 {
		pl.query = true
		kce := strings.Join(keyConds, " AND ")
		pl.in.KeyConditionExpression = &kce
	}
	if pl.query {
		// A Query's filter may not name its key attributes: conditions on
		// them are evaluated here, on the Query's items.
		var post, filter []partiql.Cond
		for _, c := range rest {
			names := condNames(c)
			if names[hash.Name] || rng != nil && names[rng.Name] {
				post = append(post, c)
			} else {
				filter = append(filter, c)
			}
		}
		if len(post) > 0 {
			var pb exprBuilder
			ce, err := pb.conds(post)
			if err != nil {
				return nil, err
			}
			pin := pb.input()
			if pl.post, err = expr.ParseCondition(expr.FilterExpression, ce, expr.NewParams(pin.ExpressionAttributeNames, pin.ExpressionAttributeValues)); err != nil {
				return nil, asAPIError(err)
			}
		}
		rest = filter
	}
	if len(rest) > 0 {
		fe, err := b.conds(rest)
		if err != nil {
			return nil, err
		}
		pl.in.FilterExpression = &fe
	}
	// The projection is applied by shape, on whole items: a
	// ProjectionExpression would renumber list elements (l[1] → l[0]).
	pl.in.exprInput = b.input()
	return pl, nil
}

// sortKeyCondition renders c as a key condition on the sort key, or "";
// eq reports an equality.
func sortKeyCondition(b *exprBuilder, c partiql.Cond, name string) (kc string, eq bool) {
	if op, v, ok := keyCompare(c, name); ok && op != "<>" {
		return b.name(name) + " " + op + " " + b.value(v), op == "="
	}
	isName := func(o partiql.Operand) bool {
		p, ok := o.(*partiql.PathOp)
		return ok && len(p.Path) == 1 && p.Path[0].Name == name
	}
	switch c := c.(type) {
	case *partiql.Between:
		lo, lok := c.Lo.(*partiql.Literal)
		hi, hok := c.Hi.(*partiql.Literal)
		if isName(c.X) && lok && hok {
			return b.name(name) + " BETWEEN " + b.value(lo.Value) + " AND " + b.value(hi.Value), false
		}
	case *partiql.Func:
		if v, ok := c.Args[1].(*partiql.Literal); ok && c.Name == "begins_with" && isName(c.Args[0]) {
			return "begins_with(" + b.name(name) + ", " + b.value(v.Value) + ")", false
		}
	}
	return "", false
}

// shape returns the items as SELECT's projection names them: each
// selected path under its last attribute name.
func (pl *selectPlan) shape(items []attr.Item) []attr.Item {
	if len(pl.paths) == 0 {
		return items
	}
	out := make([]attr.Item, 0, len(items))
	for _, it := range items {
		o := attr.Item{}
		for _, p := range pl.paths {
			if v, ok := p.Get(it); ok {
				leaf := p[0].Name
				for _, e := range p {
					if !e.IsIndex {
						leaf = e.Name
					}
				}
				o[leaf] = v
			}
		}
		out = append(out, o)
	}
	return out
}

func (s *Store) runSelect(pl *selectPlan) (*QueryOutput, error) {
	if !pl.query {
		return s.Scan(&pl.in)
	}
	out, err := s.Query(&pl.in)
	if err != nil || pl.post == nil || out.Items == nil {
		return out, err
	}
	kept := (*out.Items)[:0]
	for _, it := range *out.Items {
		if pl.post.Eval(it) {
			kept = append(kept, it)
		}
	}
	out.Items = &kept
	out.Count = int64(len(kept))
	return out, nil
}

// pageToken is what a NextToken holds: the partition key index of an IN
// SELECT and the key to continue after.
type pageToken struct {
	I int       `json:"i,omitempty"`
	K attr.Item `json:"k,omitempty"`
}

func encodeNextToken(t pageToken) string {
	b, _ := json.Marshal(t)
	return base64.StdEncoding.EncodeToString(b)
}

func decodeNextToken(tok string) (pageToken, error) {
	b, err := base64.StdEncoding.DecodeString(tok)
	var t pageToken
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || len(t.K) == 0 && t.I <= 0 || t.I < 0 {
		return pageToken{}, validationf("Invalid NextToken")
	}
	return t, nil
}

// addCapacity adds src's units to dst.
func addCapacity(dst, src *ConsumedCapacity) {
	dst.CapacityUnits += src.CapacityUnits
	dst.ReadCapacityUnits += src.ReadCapacityUnits
	dst.WriteCapacityUnits += src.WriteCapacityUnits
	if src.Table != nil {
		if dst.Table == nil {
			dst.Table = &Capacity{}
		}
		dst.Table.CapacityUnits += src.Table.CapacityUnits
		dst.Table.ReadCapacityUnits += src.Table.ReadCapacityUnits
	}
	for _, m := range []struct{ d, s *map[string]*Capacity }{{&dst.GlobalSecondaryIndexes, &src.GlobalSecondaryIndexes}, {&dst.LocalSecondaryIndexes, &src.LocalSecondaryIndexes}} {
		for name, c := range *m.s {
			if *m.d == nil {
				*m.d = map[string]*Capacity{}
			}
			if (*m.d)[name] == nil {
				(*m.d)[name] = &Capacity{}
			}
			(*m.d)[name].CapacityUnits += c.CapacityUnits
			(*m.d)[name].ReadCapacityUnits += c.ReadCapacityUnits
		}
	}
}

// runSelectPage runs one page of a SELECT from tok: the next token is nil
// on the last page.
func (s *Store) runSelectPage(pl *selectPlan, tok pageToken) (*QueryOutput, *pageToken, error) {
	if len(pl.hashValues) == 0 {
		if tok.I != 0 {
			return nil, nil, validationf("Invalid NextToken")
		}
		pl.in.ExclusiveStartKey = tok.K
		out, err := s.runSelect(pl)
		if err != nil || len(out.LastEvaluatedKey) == 0 {
			return out, nil, err
		}
		return out, &pageToken{K: out.LastEvaluatedKey}, nil
	}
	if tok.I >= len(pl.hashValues) {
		return nil, nil, validationf("Invalid NextToken")
	}
	total := &QueryOutput{Items: &[]attr.Item{}}
	for i := tok.I; i < len(pl.hashValues); i++ {
		sub := *pl
		sub.in.ExpressionAttributeValues = maps.Clone(pl.in.ExpressionAttributeValues)
		sub.in.ExpressionAttributeValues[pl.hashPH] = pl.hashValues[i]
		sub.in.ExclusiveStartKey = nil
		if i == tok.I {
			sub.in.ExclusiveStartKey = tok.K
		}
		if pl.in.Limit != nil {
			rem := *pl.in.Limit - total.ScannedCount
			if rem <= 0 {
				return total, &pageToken{I: i}, nil
			}
			sub.in.Limit = &rem
		}
		out, err := s.runSelect(&sub)
		if err != nil {
			return nil, nil, err
		}
		if out.Items != nil {
			*total.Items = append(*total.Items, *out.Items...)
		}
		total.Count += out.Count
		total.ScannedCount += out.ScannedCount
		if out.ConsumedCapacity != nil {
			if total.ConsumedCapacity == nil {
				total.ConsumedCapacity = &ConsumedCapacity{TableName: out.ConsumedCapacity.TableName}
			}
			addCapacity(total.ConsumedCapacity, out.ConsumedCapacity)
		}
		if len(out.LastEvaluatedKey) > 0 {
			total.LastEvaluatedKey = out.LastEvaluatedKey
			return total, &pageToken{I: i, K: out.LastEvaluatedKey}, nil
		}
	}
	return total, nil, nil
}

// ExecuteStatement runs one PartiQL statement.
func (s *Store) ExecuteStatement(in *ExecuteStatementInput) (*ExecuteStatementOutput, error) {
	var c constraintErrors
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if in.Limit != nil && *in.Limit < 1 {
		c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if err := checkRVOnFailure(in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	st, err := parseStatement(in.Statement, in.Parameters)
	if err != nil {
		return nil, err
	}
	if _, ok := st.(*partiql.Exists); ok {
		return nil, validationf("EXISTS is only supported in ExecuteTransaction")
	}
	sel, ok := st.(*partiql.Select)
	if !ok {
		if in.NextToken != nil || in.Limit != nil {
			return nil, validationf("Limit and NextToken are only supported for SELECT statements")
		}
		w, err := s.translateWrite(st)
		if err != nil {
			return nil, err
		}
		out, err := s.execWrite(w, in.ReturnConsumedCapacity, in.ReturnValuesOnConditionCheckFailure)
		if err != nil {
			return nil, err
		}
		res := &ExecuteStatementOutput{Items: []attr.Item{}, ConsumedCapacity: out.ConsumedCapacity}
		if len(out.Attributes) > 0 {
			res.Items = append(res.Items, out.Attributes)
		}
		return res, nil
	}
	pl, err := s.translateSelect(sel)
	if err != nil {
		return nil, err
	}
	pl.in.ConsistentRead = in.ConsistentRead
	pl.in.Limit = in.Limit
	pl.in.ReturnConsumedCapacity = in.ReturnConsumedCapacity
	var tok pageToken
	if in.NextToken != nil {
		if tok, err = decodeNextToken(*in.NextToken); err != nil {
			return nil, err
		}
	}
	qo, next, err := s.runSelectPage(pl, tok)
	if err != nil {
		return nil, err
	}
	out := &ExecuteStatementOutput{Items: []attr.Item{}, ConsumedCapacity: qo.ConsumedCapacity}
	if qo.Items != nil {
		out.Items = pl.shape(*qo.Items)
	}
	out.LastEvaluatedKey = qo.LastEvaluatedKey
	if next != nil {
		out.NextToken = encodeNextToken(*next)
	}
	return out, nil
}

// errorCode is the Code of a batch statement error for an API error.
func errorCode(e *Error) string {
	switch e.Type {
	case "ValidationException":
		return "ValidationError"
	case "InternalServerError":
		return e.Type
	}
	return strings.TrimSuffix(e.Type, "Exception")
}

// BatchExecuteStatement runs up to 25 single-item statements, each on its
// own: a failing statement reports its Error and does not stop the others.
func (s *Store) BatchExecuteStatement(in *BatchExecuteStatementInput) (*BatchExecuteStatementOutput, error) {
	var c constraintErrors
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if in.Statements == nil {
		c.add("Value null at 'statements' failed to satisfy constraint: Member must not be null")
	} else if n := len(in.Statements); n < 1 || n > 25 {
		c.add("Value '%s' at 'statements' failed to satisfy constraint: Member must have length less than or equal to 25 and Member must have length greater than or equal to 1", describeTransactItems(n, "BatchStatementRequest"))
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	// A batch is all reads or all writes (statements that do not parse
	// report their error in their response).
	reads, writes := 0, 0
	for _, req := range in.Statements {
		if req.Statement == nil {
			continue
		}
		if st, err := partiql.Parse(*req.Statement, req.Parameters); err == nil {
			if _, ok := st.(*partiql.Select); ok {
				reads++
			} else {
				writes++
			}
		}
	}
	if reads > 0 && writes > 0 {
		return nil, validationf("Batch must contain either all reads or all writes")
	}
	out := &BatchExecuteStatementOutput{Responses: make([]BatchStatementResponse, len(in.Statements))}
	caps := map[string]*ConsumedCapacity{}
	var order []string
	addCap := func(cc *ConsumedCapacity) {
		if cc == nil {
			return
		}
		if prev, ok := caps[cc.TableName]; ok {
			prev.CapacityUnits += cc.CapacityUnits
			prev.ReadCapacityUnits += cc.ReadCapacityUnits
			prev.WriteCapacityUnits += cc.WriteCapacityUnits
			return
		}
		cp := &ConsumedCapacity{TableName: cc.TableName, CapacityUnits: cc.CapacityUnits, ReadCapacityUnits: cc.ReadCapacityUnits, WriteCapacityUnits: cc.WriteCapacityUnits}
		caps[cc.TableName] = cp
		order = append(order, cc.TableName)
	}
	for i, req := range in.Statements {
		resp := &out.Responses[i]
		item, cc, table, err := s.batchStatement(req, in.ReturnConsumedCapacity)
		resp.TableName = table
		addCap(cc)
		if err != nil {
			e := asAPIError(err)
			resp.Error = &BatchStatementError{Code: errorCode(e), Message: e.Message, Item: e.Item}
			continue
		}
		resp.Item = item
	}
	for _, name := range order {
		out.ConsumedCapacity = append(out.ConsumedCapacity, caps[name])
	}
	return out, nil
}

func (s *Store) batchStatement(req BatchStatementRequest, rcc string) (attr.Item, *ConsumedCapacity, string, error) {
	if err := checkRVOnFailure(req.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, nil, "", err
	}
	st, err := parseStatement(req.Statement, req.Parameters)
	if err != nil {
		return nil, nil, "", err
	}
	table := statementTable(st)
	if _, ok := st.(*partiql.Exists); ok {
		return nil, nil, table, validationf("EXISTS is only supported in ExecuteTransaction")
	}
	if sel, ok := st.(*partiql.Select); ok {
		pl, err := s.translateSelect(sel)
		if err != nil {
			return nil, nil, table, err
		}
		if !pl.fullKey {
			return nil, nil, table, missingKeyEquality()
		}
		pl.in.ConsistentRead = req.ConsistentRead
		pl.in.ReturnConsumedCapacity = rcc
		qo, err := s.runSelect(pl)
		if err != nil {
			return nil, nil, table, err
		}
		var item attr.Item
		if qo.Items != nil && len(*qo.Items) > 0 {
			item = pl.shape(*qo.Items)[0]
		}
		return item, qo.ConsumedCapacity, table, nil
	}
	w, err := s.translateWrite(st)
	if err != nil {
		return nil, nil, table, err
	}
	if w.returnValues != "" {
		return nil, nil, table, validationf("RETURNING is not supported in BatchExecuteStatement")
	}
	wo, err := s.execWrite(w, rcc, req.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, nil, table, err
	}
	return nil, wo.ConsumedCapacity, table, nil
}

// ExecuteTransaction runs up to 100 statements atomically: all writes (as
// TransactWriteItems) or all single-item SELECTs (as TransactGetItems).
func (s *Store) ExecuteTransaction(in *ExecuteTransactionInput) (*ExecuteTransactionOutput, error) {
	var c constraintErrors
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if in.TransactStatements == nil {
		c.add("Value null at 'transactStatements' failed to satisfy constraint: Member must not be null")
	} else if n := len(in.TransactStatements); n < 1 || n > maxTransactItems {
		c.add("Value '%s' at 'transactStatements' failed to satisfy constraint: Member must have length less than or equal to %d and Member must have length greater than or equal to 1", describeTransactItems(n, "ParameterizedStatement"), maxTransactItems)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	var reads []*selectPlan
	var writes []*writeAction
	var rvs []string
	for _, ps := range in.TransactStatements {
		if err := checkRVOnFailure(ps.ReturnValuesOnConditionCheckFailure); err != nil {
			return nil, err
		}
		st, err := parseStatement(ps.Statement, ps.Parameters)
		if err != nil {
			return nil, err
		}
		if sel, ok := st.(*partiql.Select); ok {
			pl, err := s.translateSelect(sel)
			if err != nil {
				return nil, err
			}
			if !pl.fullKey || pl.in.FilterExpression != nil || pl.post != nil {
				return nil, validationf("Transaction SELECT statements must specify an equality on all key attributes and no other conditions")
			}
			reads = append(reads, pl)
			continue
		}
		w, err := s.translateWrite(st)
		if err != nil {
			return nil, err
		}
		if w.returnValues != "" {
			return nil, validationf("RETURNING is not supported in ExecuteTransaction")
		}
		writes = append(writes, w)
		rvs = append(rvs, ps.ReturnValuesOnConditionCheckFailure)
	}
	if len(reads) > 0 && len(writes) > 0 {
		return nil, validationf("Transaction must contain either all reads or all writes")
	}
	if len(reads) > 0 {
		return s.transactSelects(reads, in.ReturnConsumedCapacity)
	}
	twi := &TransactWriteItemsInput{ClientRequestToken: in.ClientRequestToken, ReturnConsumedCapacity: in.ReturnConsumedCapacity}
	for i, w := range writes {
		a := w.action
		a.ReturnValuesOnConditionCheckFailure = rvs[i]
		var item TransactWriteItem
		switch w.kind {
		case "Put":
			item.Put = &a
		case "Update":
			item.Update = &a
		case "Delete":
			item.Delete = &a
		case "ConditionCheck":
			item.ConditionCheck = &a
		}
		twi.TransactItems = append(twi.TransactItems, item)
	}
	two, err := s.TransactWriteItems(twi)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Type == "TransactionCanceledException" {
			reasons := append([]CancellationReason(nil), e.CancellationReasons...)
			for i := range reasons {
				if i < len(writes) && writes[i].insert && reasons[i].Code == reasonCondition {
					reasons[i] = CancellationReason{Code: "DuplicateItem", Message: "Duplicate primary key exists in table"}
				}
			}
			return nil, transactionCanceled(reasons)
		}
		return nil, err
	}
	return &ExecuteTransactionOutput{ConsumedCapacity: two.ConsumedCapacity}, nil
}

func (s *Store) transactSelects(reads []*selectPlan, rcc string) (*ExecuteTransactionOutput, error) {
	tgi := &TransactGetItemsInput{ReturnConsumedCapacity: rcc}
	for _, pl := range reads {
		g := &TransactGet{TableName: pl.in.TableName, Key: pl.key}
		tgi.TransactItems = append(tgi.TransactItems, TransactGetItem{Get: g})
	}
	tgo, err := s.TransactGetItems(tgi)
	if err != nil {
		return nil, err
	}
	out := &ExecuteTransactionOutput{Responses: make([]ItemResponse, len(tgo.Responses)), ConsumedCapacity: tgo.ConsumedCapacity}
	for i, r := range tgo.Responses {
		if r.Item != nil {
			out.Responses[i].Item = reads[i].shape([]attr.Item{r.Item})[0]
		}
	}
	return out, nil
}
