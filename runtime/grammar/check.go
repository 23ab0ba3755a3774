package grammar

import (
	"fmt"
	"strings"
)

// check reports left recursion (an error: matching would never end) and
// rules the root cannot reach (warnings).
func (g *Grammar) check() error {
	if cycle := g.leftCycle(); cycle != nil {
		names := make([]string, len(cycle))
		for i, id := range cycle {
			names[i] = g.Rules[g.Rules[id].Of].Name
			if len(names[i]) > 64 {
				names[i] = names[i][:64] + "..."
			}
			if g.Rules[id].Of != id {
				names[i] += " (a group or repetition in it)"
			}
		}
		def := g.Rules[g.Rules[cycle[0]].Of]
		return &Error{Line: def.Line, Col: def.Col, Msg: fmt.Sprintf("%v: %s", ErrLeftRecursion, strings.Join(names, " -> ")), wrap: ErrLeftRecursion}
	}
	seen := make([]bool, len(g.Rules))
	stack := []int{g.Root}
	seen[g.Root] = true
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, alt := range g.Rules[a].Alts {
			for _, e := range alt {
				if e.Kind == Ref && !seen[e.Rule] {
					seen[e.Rule] = true
					stack = append(stack, e.Rule)
				}
			}
		}
	}
	for id, r := range g.Rules {
		if !seen[id] && r.Of == id && r.Line != 0 {
			g.Warnings = append(g.Warnings, &Error{Line: r.Line, Col: r.Col, Msg: fmt.Sprintf("rule %s is never used (the start rule %s does not reach it)", quoteName(r.Name), quoteName(g.Rules[g.Root].Name))})
		}
	}
	return nil
}

// nullable reports, per rule, whether it matches the empty string: a
// worklist over the references, linear in the grammar's size.
func (g *Grammar) nullable() []bool {
	null := make([]bool, len(g.Rules))
	var pending []int                   // per alternative: elements not yet known nullable
	var altRule []int                   // per alternative: its rule
	uses := make([][]int, len(g.Rules)) // rule -> alternatives that reference it (once per reference)
	var work []int
	for a, r := range g.Rules {
		for _, alt := range r.Alts {
			k := len(pending)
			n := 0
			for _, e := range alt {
				if e.Kind != Ref {
					n = -1 // a character or a token: never empty
					break
				}
				n++
			}
			pending = append(pending, n)
			altRule = append(altRule, a)
			if n < 0 {
				continue
			}
			for _, e := range alt {
				if e.Rule >= 0 && e.Rule < len(g.Rules) {
					uses[e.Rule] = append(uses[e.Rule], k)
				}
			}
			if n == 0 && !null[a] {
				null[a] = true
				work = append(work, a)
			}
		}
	}
	for len(work) > 0 {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		for _, k := range uses[b] {
			pending[k]--
			if a := altRule[k]; pending[k] == 0 && !null[a] {
				null[a] = true
				work = append(work, a)
			}
		}
	}
	return null
}

// checkEdge is "rule a may begin with rule To": To is referenced after
// only nullable elements. Tail: the reference is its alternative's last
// element, so entering it keeps nothing to return to.
type checkEdge struct {
	To   int
	Tail bool
}

// checkEdges are the may-begin-with edges of every rule, a prefix
// counting as empty where skip says so.
func (g *Grammar) checkEdges(skip []bool) [][]checkEdge {
	edges := make([][]checkEdge, len(g.Rules))
	for a, r := range g.Rules {
		for _, alt := range r.Alts {
			for i, e := range alt {
				if e.Kind != Ref {
					break
				}
				edges[a] = append(edges[a], checkEdge{e.Rule, i == len(alt)-1})
				if !skip[e.Rule] {
					break
				}
			}
		}
	}
	return edges
}

// leftCycle is a left-recursive cycle of rule ids (first == last), or
// nil. Two tests, so that Parse refuses what llama.cpp refuses and what
// would make matching loop:
//   - llama.cpp's: a rule may begin with itself, where a prefix counts
//     as empty only if its rule has an empty alternative ("a ::= b? a");
//   - with true nullability (a rule deriving the empty string by any
//     path), a cycle is an error unless every step of it is a tail
//     reference: such a cycle returns to the same stack ("( [x]* )*",
//     llama.cpp's "segfault" test grammar, which it accepts), while any
//     other makes the stack grow without reading a byte.
func (g *Grammar) leftCycle() []int {
	direct := make([]bool, len(g.Rules))
	for a, r := range g.Rules {
		for _, alt := range r.Alts {
			if len(alt) == 0 {
				direct[a] = true
			}
		}
	}
	if c := checkAnyCycle(g.checkEdges(direct)); c != nil {
		return c
	}
	return checkGrowingCycle(g.checkEdges(g.nullable()))
}

// checkAnyCycle finds a cycle of edges by depth-first search.
func checkAnyCycle(edges [][]checkEdge) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(edges))
	var path, cycle []int
	var visit func(a int) bool
	visit = func(a int) bool {
		color[a] = grey
		path = append(path, a)
		for _, e := range edges[a] {
			switch color[e.To] {
			case grey:
				i := len(path) - 1
				for path[i] != e.To {
					i--
				}
				cycle = append(append([]int(nil), path[i:]...), e.To)
				return true
			case white:
				if visit(e.To) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[a] = black
		return false
	}
	for a := range edges {
		if color[a] == white && visit(a) {
			return cycle
		}
	}
	return nil
}

// checkGrowingCycle finds a cycle with a non-tail edge: the strongly
// connected components (Tarjan's), then, for a non-tail edge u -> v
// inside one, the shortest path back from v to u.
func checkGrowingCycle(edges [][]checkEdge) []int {
	n := len(edges)
	index := make([]int, n)
	low := make([]int, n)
	comp := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int
	next, ncomp := 0, 0
	var strong func(a int)
	strong = func(a int) {
		index[a], low[a] = next, next
		next++
		stack = append(stack, a)
		onStack[a] = true
		for _, e := range edges[a] {
			if index[e.To] < 0 {
				strong(e.To)
				low[a] = min(low[a], low[e.To])
			} else if onStack[e.To] {
				low[a] = min(low[a], index[e.To])
			}
		}
		if low[a] == index[a] {
			for {
				b := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[b] = false
				comp[b] = ncomp
				if b == a {
					break
				}
			}
			ncomp++
		}
	}
	for a := range edges {
		if index[a] < 0 {
			strong(a)
		}
	}
	for u := range edges {
		for _, e := range edges[u] {
			if e.Tail || comp[e.To] != comp[u] {
				continue
			}
			// Breadth first from e.To back to u within the component.
			prev := map[int]int{e.To: -1}
			queue := []int{e.To}
			for len(queue) > 0 {
				a := queue[0]
				queue = queue[1:]
				if a == u {
					var back []int
					for x := u; x != -1; x = prev[x] {
						back = append(back, x)
					}
					cycle := []int{u}
					for i := len(back) - 1; i >= 0; i-- {
						cycle = append(cycle, back[i])
					}
					return cycle
				}
				for _, f := range edges[a] {
					if _, seen := prev[f.To]; !seen && comp[f.To] == comp[u] {
						prev[f.To] = a
						queue = append(queue, f.To)
					}
				}
			}
		}
	}
	return nil
}
