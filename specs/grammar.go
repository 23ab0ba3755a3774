package specs

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar of the small language embedded in spec files: expressions
// (hyperparameter defaults, shapes, conditions), graph statements and the
// tail of a tensor declaration. participle parses each YAML string on its
// own; positions are mapped back into the YAML file by a posMap.
//
// Binary operators are parsed flat (operand, operator, operand, ...) and
// given their precedence afterwards (see build.go): one table of precedences
// is easier to read and to change than a grammar rule per level.

var specLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
	{Name: "Float", Pattern: `\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+`},
	{Name: "Int", Pattern: `\d+`},
	{Name: "String", Pattern: `"(\\.|[^"\\])*"|'[^']*'`},
	{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: "Punct", Pattern: `\?\?|&&|\|\||==|!=|<=|>=|[-+*/%<>!=(),.\[\]]`},
})

type exprAST struct {
	Pos   lexer.Position
	First *unaryAST `parser:"@@"`
	Rest  []*opTail `parser:"@@*"`
}

type opTail struct {
	Pos   lexer.Position
	Op    string    `parser:"@(\"??\" | \"||\" | \"&&\" | \"==\" | \"!=\" | \"<=\" | \">=\" | \"<\" | \">\" | \"+\" | \"-\" | \"*\" | \"/\" | \"%\")"`
	Right *unaryAST `parser:"@@"`
}

type unaryAST struct {
	Pos     lexer.Position
	Ops     []string    `parser:"@(\"-\" | \"!\")*"`
	Primary *primaryAST `parser:"@@"`
}

type primaryAST struct {
	Pos   lexer.Position
	Float *string  `parser:"(  @Float"`
	Int   *string  `parser:" | @Int"`
	Str   *string  `parser:" | @String"`
	Meta  []string `parser:" | \"meta\" ( \".\" @Ident )+"`
	Name  *nameAST `parser:" | @@"`
	Paren *exprAST `parser:" | \"(\" @@ \")\" )"`
}

// nameAST is a name, or a call when followed by parentheses.
type nameAST struct {
	Pos  lexer.Position
	Name string    `parser:"@Ident"`
	Call bool      `parser:"( @\"(\""`
	Args []*argAST `parser:"  ( @@ ( \",\" @@ )* )? \")\" )?"`
}

// argAST is a call argument, positional or named (key=value).
type argAST struct {
	Pos   lexer.Position
	Key   string   `parser:"( @Ident \"=\" )?"`
	Value *exprAST `parser:"@@"`
}

// stmtAST is one statement of a graph block:
//
//	q, k, v = split(qkv, heads * head_dim, kv_dim, kv_dim) if fused
type stmtAST struct {
	Pos     lexer.Position
	Targets []string `parser:"@Ident ( \",\" @Ident )* \"=\""`
	Value   *exprAST `parser:"@@"`
	Cond    *exprAST `parser:"( \"if\" @@ )?"`
}

// tensorAST is what follows the name of a tensor declaration:
//
//	[dim, heads * head_dim] optional
type tensorAST struct {
	Pos   lexer.Position
	Shape []*exprAST `parser:"\"[\" ( @@ ( \",\" @@ )* )? \"]\""`
	Flags []*flagAST `parser:"@@*"`
}

type flagAST struct {
	Pos      lexer.Position
	Optional bool     `parser:"(  @\"optional\""`
	F32      bool     `parser:" | @\"f32\""`
	Fallback *string  `parser:" | \"fallback\" @Ident"`
	If       *exprAST `parser:" | \"if\" @@ )"`
}

var (
	exprParser   = buildParser[exprAST]()
	stmtParser   = buildParser[stmtAST]()
	tensorParser = buildParser[tensorAST]()
)

func buildParser[G any]() *participle.Parser[G] {
	return participle.MustBuild[G](
		participle.Lexer(specLexer),
		participle.Elide("Whitespace"),
		participle.UseLookahead(3),
	)
}
