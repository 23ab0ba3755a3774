package chat

// The syntax tree: two sealed sums, statements and expressions. Every node
// keeps the byte offset it starts at, so any error can say line:col.

type stmt interface{ isStmt() }

type (
	textStmt   struct{ text string }
	outputStmt struct {
		off int
		x   expr
	}
	ifStmt struct {
		conds  []expr
		bodies [][]stmt
		els    []stmt
	}
	forStmt struct {
		off       int
		target    assignTarget
		iter      expr
		cond      expr // the "if" filter of the loop, or nil
		body, els []stmt
	}
	setStmt struct {
		off    int
		target assignTarget
		value  expr
	}
	setBlockStmt struct {
		off     int
		target  assignTarget
		filters []*filterExpr // applied to the captured text, innermost first
		body    []stmt
	}
	macroStmt struct {
		off    int
		name   string
		params []param
		body   []stmt
	}
	callBlockStmt struct {
		off    int
		params []param // caller's own parameters: {% call(x) m() %}
		call   *callExpr
		body   []stmt
	}
	filterBlockStmt struct {
		off     int
		filters []*filterExpr
		body    []stmt
	}
	withStmt struct {
		names  []string
		values []expr
		body   []stmt
	}
	breakStmt    struct{ off int }
	continueStmt struct{ off int }
)

func (*textStmt) isStmt()        {}
func (*outputStmt) isStmt()      {}
func (*ifStmt) isStmt()          {}
func (*forStmt) isStmt()         {}
func (*setStmt) isStmt()         {}
func (*setBlockStmt) isStmt()    {}
func (*macroStmt) isStmt()       {}
func (*callBlockStmt) isStmt()   {}
func (*filterBlockStmt) isStmt() {}
func (*withStmt) isStmt()        {}
func (*breakStmt) isStmt()       {}
func (*continueStmt) isStmt()    {}

// assignTarget is a name, a namespace attribute (ns.attr) or a tuple of names.
type assignTarget struct {
	off   int
	names []string // one name, or several for tuple unpacking
	tuple bool
	attr  string // set for ns.attr; names[0] is the namespace
}

type param struct {
	name string
	def  expr // nil: required
}

type kwarg struct {
	name string
	x    expr
}

type expr interface{ offset() int }

type (
	constExpr struct {
		off int
		v   any // nil, bool, int64, float64 or string only: constants are shared
	}
	nameExpr struct {
		off  int
		name string
	}
	listExpr struct {
		off   int
		items []expr
		tuple bool
	}
	dictExpr struct {
		off        int
		keys, vals []expr
	}
	getattrExpr struct {
		off  int
		x    expr
		name string
	}
	getitemExpr struct {
		off int
		x   expr
		key expr
	}
	sliceExpr struct {
		off               int
		start, stop, step expr // each may be nil
	}
	callExpr struct {
		off  int
		fn   expr
		args []expr
		kw   []kwarg
		star expr // *args
		dstr expr // **kwargs
	}
	filterExpr struct {
		off  int
		x    expr // nil in a filter block or set block
		name string
		args []expr
		kw   []kwarg
		star expr
		dstr expr
	}
	testExpr struct {
		off  int
		x    expr
		name string
		args []expr
		kw   []kwarg
	}
	unaryExpr struct {
		off int
		op  string // "not", "-", "+"
		x   expr
	}
	binExpr struct {
		off  int
		op   string // + - * / // % **
		l, r expr
	}
	concatExpr struct {
		off   int
		parts []expr
	}
	compareExpr struct {
		off   int
		first expr
		ops   []string // == != < > <= >= in notin
		rest  []expr
	}
	logicExpr struct {
		off  int
		and  bool
		l, r expr
	}
	condExpr struct {
		off              int
		test, then, els_ expr // els_ may be nil: undefined
	}
)

func (e *constExpr) offset() int   { return e.off }
func (e *nameExpr) offset() int    { return e.off }
func (e *listExpr) offset() int    { return e.off }
func (e *dictExpr) offset() int    { return e.off }
func (e *getattrExpr) offset() int { return e.off }
func (e *getitemExpr) offset() int { return e.off }
func (e *sliceExpr) offset() int   { return e.off }
func (e *callExpr) offset() int    { return e.off }
func (e *filterExpr) offset() int  { return e.off }
func (e *testExpr) offset() int    { return e.off }
func (e *unaryExpr) offset() int   { return e.off }
func (e *binExpr) offset() int     { return e.off }
func (e *concatExpr) offset() int  { return e.off }
func (e *compareExpr) offset() int { return e.off }
func (e *logicExpr) offset() int   { return e.off }
func (e *condExpr) offset() int    { return e.off }
