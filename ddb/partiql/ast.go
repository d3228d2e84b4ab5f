package partiql

import (
	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

// Statement is a parsed statement: *Select, *Insert, *Update, *Delete or
// *Exists.
type Statement interface{ stmt() }

// Select is SELECT projection FROM "table"["index"] [WHERE cond].
type Select struct {
	Table string
	Index string      // "" for the table itself
	Paths []expr.Path // nil for SELECT *
	Where Cond        // nil when absent
	// OrderBy is the ORDER BY attribute ("" when absent); Desc is DESC.
	OrderBy string
	Desc    bool
}

// Insert is INSERT INTO "table" VALUE {...}.
type Insert struct {
	Table string
	Item  attr.Item
}

// Update is UPDATE "table" SET ... / REMOVE ... WHERE cond.
type Update struct {
	Table   string
	Actions []Action
	Where   Cond
	// Returning is the RETURNING clause as a ReturnValues value
	// (ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW), "" when absent.
	Returning string
}

// Delete is DELETE FROM "table" WHERE cond.
type Delete struct {
	Table string
	Where Cond
	// Returning is "ALL_OLD" for RETURNING ALL OLD *, else "".
	Returning string
}

// Exists is EXISTS(SELECT ...): a condition check in ExecuteTransaction.
type Exists struct{ Select *Select }

func (*Exists) stmt() {}
func (*Select) stmt() {}
func (*Insert) stmt() {}
func (*Update) stmt() {}
func (*Delete) stmt() {}

// Action is one SET or REMOVE of an UPDATE. For REMOVE, Value is nil.
type Action struct {
	Remove bool
	Path   expr.Path
	Value  Operand
}

// Operand is a value in a condition or SET: *PathOp, *Literal, *Call or
// *Arith.
type Operand interface{ operand() }

// PathOp is a document path.
type PathOp struct{ Path expr.Path }

// Literal is a constant (or a bound ? parameter).
type Literal struct{ Value attr.Value }

// Call is a function used as a value: size(path), list_append(a, b),
// if_not_exists(path, v), set_add(path, set), set_delete(path, set).
type Call struct {
	Name string // lower case
	Args []Operand
}

// Arith is a + b or a - b.
type Arith struct {
	Op   string
	L, R Operand
}

func (*PathOp) operand()  {}
func (*Literal) operand() {}
func (*Call) operand()    {}
func (*Arith) operand()   {}

// Cond is a condition: *Compare, *Between, *In, *Logic, *Not, *Func or
// *Missing.
type Cond interface{ cond() }

// Compare is L op R with op one of = <> < <= > >=.
type Compare struct {
	Op   string
	L, R Operand
}

// Between is X BETWEEN Lo AND Hi.
type Between struct{ X, Lo, Hi Operand }

// In is X IN [v, ...].
type In struct {
	X    Operand
	List []Operand
}

// Logic is L AND R or L OR R.
type Logic struct {
	Op   string // "AND" or "OR"
	L, R Cond
}

// Not is NOT X.
type Not struct{ X Cond }

// Func is a boolean function: begins_with, contains, attribute_exists,
// attribute_not_exists, attribute_type.
type Func struct {
	Name string // lower case
	Args []Operand
}

// Missing is path IS [NOT] MISSING.
type Missing struct {
	Path expr.Path
	Not  bool
}

func (*Compare) cond() {}
func (*Between) cond() {}
func (*In) cond()      {}
func (*Logic) cond()   {}
func (*Not) cond()     {}
func (*Func) cond()    {}
func (*Missing) cond() {}

// Conjuncts splits c at its top-level ANDs.
func Conjuncts(c Cond) []Cond {
	if c == nil {
		return nil
	}
	if l, ok := c.(*Logic); ok && l.Op == "AND" {
		return append(Conjuncts(l.L), Conjuncts(l.R)...)
	}
	return []Cond{c}
}
