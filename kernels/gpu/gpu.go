package gpu

import (
	"embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/kernels"
)

//go:embed *.h shim/*.h
var sources embed.FS

// FS holds the kernel bodies, the preludes, ShaderTypes.h and the CUDA
// shim: what a target's generated source includes.
var FS fs.FS = sources

// Entry is one catalog kernel as the bodies define it: the family file,
// the body call (gemv<W_Q4_0>) and the body function's parameters.
type Entry struct {
	Name   string // the catalog kernel (gemv_q4_0)
	File   string // the body file (gemv.h)
	Call   string // what the entry calls (gemv<W_Q4_0>)
	Func   string // the body function (gemv)
	Params []Param
	// Body is the body function's code (its braces' contents, comments
	// removed).
	Body string
	// Waits: the body calls grid_wait itself (prelude_cuda.h), directly or
	// through functions of its family's file, after reading what no command
	// writes; the CUDA entry then does not wait before calling it.
	Waits bool
	// Bounds, where the body file names the body function in a
	// "//! cuda_launch_bounds FUNC THREADS BLOCKS" line: the CUDA entry's
	// __launch_bounds__, at most THREADS threads per threadgroup with
	// registers for BLOCKS threadgroups per SM (Metal has no such hint).
	Bounds [2]int
	// BoundsUnless, where that line ends "unless EXPR": an expression over
	// the kernel's function constants (names, numbers, comparisons, ! &&
	// || and parentheses) under which a specialization's entry has no
	// __launch_bounds__, so that one body can be held to BLOCKS in some of
	// its specializations only (kernels/gpu.CUDA evaluates it with the
	// constants' values).
	BoundsUnless string
}

// Param is one parameter of a body function: its declared type (with the
// dialect's address-space words) and name, and what the entry binds to it.
type Param struct {
	Type, Name string
	Kind       ParamKind
	Slot       int // the catalog's binding slot (buffers and the parameter struct)
}

// ParamKind says what an entry passes for a body parameter.
type ParamKind uint8

const (
	Buffer      ParamKind = iota // a bound buffer (device pointer)
	ParamStruct                  // the parameter struct (constant P&)
	Threadgroup                  // the threadgroup memory (threadgroup T*)
	Special                      // a thread-position value (tgpig, tid, sg, lane, ntg)
)

// specials are the thread-position parameters a body may take, by name:
// MSL's attribute for each.
var specials = map[string]string{
	"tgpig": "threadgroup_position_in_grid",
	"tid":   "thread_index_in_threadgroup",
	"tpitg": "thread_index_in_threadgroup",
	"sg":    "simdgroup_index_in_threadgroup",
	"lane":  "thread_index_in_simdgroup",
	"ntg":   "threads_per_threadgroup",
}

var (
	entryRE   = regexp.MustCompile(`(?m)^//! entry (\w+) = (\w+)(<[^>\n]*>)?\s*$`)
	boundsRE  = regexp.MustCompile(`(?m)^//! cuda_launch_bounds (\w+) (\d+) (\d+)(?: unless ([\w <>=!&|()]+?))?\s*$`)
	commentRE = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	includeRE = regexp.MustCompile(`(?m)^#include "([^"]+)"\s*$`)
	callRE    = regexp.MustCompile(`\b(\w+)\s*(?:<[^;{}()]*>)?\s*\(`)
)

// Families lists the body files that define entries, sorted.
func Families() []string {
	names, _ := fs.Glob(sources, "*.h")
	var out []string
	for _, n := range names {
		b, _ := sources.ReadFile(n)
		if entryRE.Match(b) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Entries reads every family's entries, checked against the catalog: each
// names a catalog kernel once, and its body's buffer parameters are the
// kernel's bindings by name (the parameter struct the kernel's).
func Entries() (map[string]*Entry, error) {
	out := map[string]*Entry{}
	for _, f := range Families() {
		b, err := sources.ReadFile(f)
		if err != nil {
			return nil, err
		}
		text := string(b)
		code := commentRE.ReplaceAllString(text, "")
		bounds := map[string][2]int{}
		unless := map[string]string{}
		for _, m := range boundsRE.FindAllStringSubmatch(text, -1) {
			t, _ := strconv.Atoi(m[2])
			n, _ := strconv.Atoi(m[3])
			if t < 1 || t > 1024 || n < 1 || n > 32 {
				return nil, fmt.Errorf("gpu: %s: cuda_launch_bounds %s %s %s: threads must lie in [1, 1024] and blocks in [1, 32]", f, m[1], m[2], m[3])
			}
			bounds[m[1]] = [2]int{t, n}
			unless[m[1]] = m[4]
		}
		used := map[string]bool{}
		for _, m := range entryRE.FindAllStringSubmatch(text, -1) {
			name, fn := m[1], m[2]
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("gpu: %s: kernel %s has two entries", f, name)
			}
			k, ok := kernels.Lookup(name)
			if !ok {
				return nil, fmt.Errorf("gpu: %s: entry %s is not a catalog kernel", f, name)
			}
			params, body, err := bodyParams(code, fn)
			if err != nil {
				return nil, fmt.Errorf("gpu: %s: entry %s: %w", f, name, err)
			}
			e := &Entry{Name: name, File: f, Call: fn + m[3], Func: fn, Body: body, Waits: waits(code, body, map[string]bool{fn: true}), Bounds: bounds[fn], BoundsUnless: unless[fn]}
			if err := constantExpr(k, e.BoundsUnless); err != nil {
				return nil, fmt.Errorf("gpu: %s: cuda_launch_bounds %s ... unless %s: %s: %w", f, fn, e.BoundsUnless, name, err)
			}
			used[fn] = true
			for _, p := range params {
				if err := classify(&p, k); err != nil {
					return nil, fmt.Errorf("gpu: %s: entry %s: %w", f, name, err)
				}
				e.Params = append(e.Params, p)
			}
			if err := complete(e, k); err != nil {
				return nil, fmt.Errorf("gpu: %s: entry %s: %w", f, name, err)
			}
			out[name] = e
		}
		for fn := range bounds {
			if !used[fn] {
				return nil, fmt.Errorf("gpu: %s: cuda_launch_bounds names %s, which no entry calls", f, fn)
			}
		}
	}
	return out, nil
}

// waits reports whether body, a function of code, calls grid_wait()
// directly or through the void functions code defines (seen: those
// already looked at).
func waits(code, body string, seen map[string]bool) bool {
	if strings.Contains(body, "grid_wait()") {
		return true
	}
	for _, m := range callRE.FindAllStringSubmatch(body, -1) {
		if seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		if _, b, err := bodyParams(code, m[1]); err == nil && waits(code, b, seen) {
			return true
		}
	}
	return false
}

// bodyParams finds the definition of function fn (a template or not) in
// code and splits its parameter list; it returns its body too.
func bodyParams(code, fn string) ([]Param, string, error) {
	re := regexp.MustCompile(`\binline\s+void\s+` + fn + `\s*\(`)
	loc := re.FindStringIndex(code)
	if loc == nil {
		return nil, "", fmt.Errorf("no body function %q (inline void %s(...))", fn, fn)
	}
	list, err := Balanced(code, loc[1]-1, '(', ')')
	if err != nil {
		return nil, "", fmt.Errorf("body %s: %w", fn, err)
	}
	bo := strings.IndexByte(code[loc[1]+len(list):], '{')
	if bo < 0 {
		return nil, "", fmt.Errorf("body %s has no braces", fn)
	}
	body, err := Balanced(code, loc[1]+len(list)+bo, '{', '}')
	if err != nil {
		return nil, "", fmt.Errorf("body %s: %w", fn, err)
	}
	var out []Param
	for _, p := range SplitTop(list) {
		p = strings.Join(strings.Fields(p), " ")
		j := strings.LastIndexFunc(p, func(r rune) bool { return !isIdent(r) })
		if j < 0 || j == len(p)-1 {
			return nil, "", fmt.Errorf("body %s: parameter %q has no name", fn, p)
		}
		out = append(out, Param{Type: strings.TrimSpace(p[:j+1]), Name: p[j+1:]})
	}
	return out, body, nil
}

func classify(p *Param, k *kernels.Kernel) error {
	if _, ok := specials[p.Name]; ok {
		p.Kind = Special
		return nil
	}
	switch {
	case strings.HasPrefix(p.Type, "threadgroup "):
		p.Kind = Threadgroup
		return nil
	case strings.HasPrefix(p.Type, "constant ") && strings.HasSuffix(p.Type, "&"):
		want := k.Params.Name
		if strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(p.Type, "constant "), "&")) != want {
			return fmt.Errorf("parameter %s is %q, the catalog's struct is %s", p.Name, p.Type, want)
		}
		p.Kind, p.Slot = ParamStruct, k.ParamSlot
		return nil
	case strings.HasPrefix(p.Type, "device "):
		for _, b := range k.Bindings {
			if b.Name == p.Name && b.Slot != k.ParamSlot {
				p.Kind, p.Slot = Buffer, b.Slot
				return nil
			}
		}
		return fmt.Errorf("parameter %s is not a binding of the catalog's %s", p.Name, k.Name)
	}
	return fmt.Errorf("parameter %q %s is neither a buffer (device), the parameter struct (constant P&), threadgroup memory nor a thread position", p.Type, p.Name)
}

// complete checks that every binding of k is a parameter of the body.
func complete(e *Entry, k *kernels.Kernel) error {
	for _, b := range k.Bindings {
		found := false
		for _, p := range e.Params {
			found = found || (p.Kind == Buffer || p.Kind == ParamStruct) && p.Slot == b.Slot
		}
		if !found {
			return fmt.Errorf("the catalog's slot %d (%s) is not a parameter of %s", b.Slot, b.Name, e.Func)
		}
	}
	return nil
}

// Constants are the function constants of a family file: the union of its
// kernels' catalog constants, one name per index.
func Constants(file string, es map[string]*Entry) ([]kernels.Constant, error) {
	byIndex := map[int]kernels.Constant{}
	for _, e := range es {
		if e.File != file {
			continue
		}
		k, _ := kernels.Lookup(e.Name)
		for _, c := range k.Constants {
			if o, ok := byIndex[c.Index]; ok && (o.Name != c.Name || o.Type != c.Type) {
				return nil, fmt.Errorf("gpu: %s: constant %d is %s %s for one kernel and %s %s for %s", file, c.Index, o.Type, o.Name, c.Type, c.Name, e.Name)
			}
			byIndex[c.Index] = c
		}
	}
	out := make([]kernels.Constant, 0, len(byIndex))
	for _, c := range byIndex {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// Expand returns a body file with its local includes inlined, each once.
func Expand(file string, seen map[string]bool) (string, error) {
	return ExpandFrom(func(name string) ([]byte, error) { return sources.ReadFile(name) }, file, seen)
}

// ExpandFrom is Expand over the files read gives (kernels/metal reads its
// generated .metal files and, for their includes, this package's).
func ExpandFrom(read func(string) ([]byte, error), file string, seen map[string]bool) (string, error) {
	b, err := read(file)
	if err != nil {
		return "", fmt.Errorf("gpu: %w", err)
	}
	var err2 error
	out := includeRE.ReplaceAllStringFunc(string(b), func(line string) string {
		inc := includeRE.FindStringSubmatch(line)[1]
		if seen[inc] {
			return "// (" + inc + ": inlined above)"
		}
		seen[inc] = true
		s, err := ExpandFrom(read, inc, seen)
		if err != nil && err2 == nil {
			err2 = err
		}
		return s
	})
	return out, err2
}

// sortedEntries are the entries of file in name order.
func sortedEntries(file string, es map[string]*Entry) []*Entry {
	var out []*Entry
	for _, e := range es {
		if e.File == file {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func args(e *Entry) string {
	names := make([]string, len(e.Params))
	for i, p := range e.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// Balanced returns the text between the bracket lb at open and its match.
func Balanced(s string, open int, lb, rb byte) (string, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case lb:
			depth++
		case rb:
			depth--
			if depth == 0 {
				return s[open+1 : i], nil
			}
		}
	}
	return "", fmt.Errorf("unbalanced %c", lb)
}

// SplitTop splits a parameter list at the commas outside brackets.
func SplitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '<', '{':
			depth++
		case ')', ']', '>', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func isIdent(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func constType(c kernels.Constant) string {
	if c.Type == kernels.ConstBool {
		return "bool"
	}
	return "uint"
}

func itoa(i int) string { return strconv.Itoa(i) }

// The CUDA backend compiles every entry of the one source (runtime/cuda),
// and clang's CUDA front end checks each in CI: they are registered as
// its kernels, as kernels/metal registers the MSL's.
func init() {
	es, err := Entries()
	if err != nil {
		panic(err)
	}
	names := make([]string, 0, len(es))
	for n := range es {
		names = append(names, n)
	}
	sort.Strings(names)
	kernels.MustRegister("cuda", names...)
}

// constantExpr checks that every name in expr is a function constant of
// kernel k (the bound's condition may use nothing else) and that it
// evaluates.
func constantExpr(k *kernels.Kernel, expr string) error {
	if expr == "" {
		return nil
	}
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return err
	}
	if _, err := evalNode(e, nil); err != nil {
		return err
	}
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && err == nil &&
			!slices.ContainsFunc(k.Constants, func(c kernels.Constant) bool { return c.Name == id.Name }) {
			err = fmt.Errorf("%s is not one of its function constants", id.Name)
		}
		return err == nil
	})
	return err
}

// evalConstantExpr evaluates a condition over function constants (a
// constant not in values is 0, false; true is 1): decimal numbers, names,
// ( ), !, < <= > >= == !=, && and ||, which C and Go spell alike.
func evalConstantExpr(expr string, values map[string]uint32) (int64, error) {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return 0, err
	}
	return evalNode(e, values)
}

func evalNode(n ast.Expr, values map[string]uint32) (int64, error) {
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	switch n := n.(type) {
	case *ast.Ident:
		return int64(values[n.Name]), nil
	case *ast.BasicLit:
		if n.Kind == token.INT {
			return strconv.ParseInt(n.Value, 10, 64)
		}
	case *ast.ParenExpr:
		return evalNode(n.X, values)
	case *ast.UnaryExpr:
		if n.Op == token.NOT {
			x, err := evalNode(n.X, values)
			return b2i(x == 0), err
		}
	case *ast.BinaryExpr:
		x, err := evalNode(n.X, values)
		if err != nil {
			return 0, err
		}
		y, err := evalNode(n.Y, values)
		if err != nil {
			return 0, err
		}
		switch n.Op {
		case token.LSS:
			return b2i(x < y), nil
		case token.LEQ:
			return b2i(x <= y), nil
		case token.GTR:
			return b2i(x > y), nil
		case token.GEQ:
			return b2i(x >= y), nil
		case token.EQL:
			return b2i(x == y), nil
		case token.NEQ:
			return b2i(x != y), nil
		case token.LAND:
			return b2i(x != 0 && y != 0), nil
		case token.LOR:
			return b2i(x != 0 || y != 0), nil
		}
	}
	return 0, fmt.Errorf("%T is not part of a constant condition", n)
}
