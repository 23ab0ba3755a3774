package grammar

import (
	"fmt"
	"strings"
)

// check reports left recursion (an error: matching would never end) and
// rules the root cannot reach (warnings).
func (g *Grammar) check() error {
	nullable := g.nullable()
	// Edges: rule a may begin with rule b.
	first := make([][]int, len(g.Rules))
	for a, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				if e.Kind != Ref {
					break
				}
				first[a] = append(first[a], e.Rule)
				if !nullable[e.Rule] {
					break
				}
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.Rules))
	var path []int
	var cycle []int
	var visit func(a int) bool
	visit = func(a int) bool {
		color[a] = grey
		path = append(path, a)
		for _, b := range first[a] {
			switch color[b] {
			case grey:
				for i, x := range path {
					if x == b {
						cycle = append(append([]int(nil), path[i:]...), b)
						break
					}
				}
				return true
			case white:
				if visit(b) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[a] = black
		return false
	}
	for a := range g.Rules {
		if color[a] == white && visit(a) {
			names := make([]string, len(cycle))
			for i, id := range cycle {
				names[i] = g.Rules[g.Rules[id].Of].Name
				if g.Rules[id].Of != id {
					names[i] += " (a group or repetition in it)"
				}
			}
			def := g.Rules[g.Rules[cycle[0]].Of]
			return &Error{Line: def.Line, Col: def.Col, Msg: fmt.Sprintf("%v: %s", ErrLeftRecursion, strings.Join(names, " -> "))}
		}
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
			g.Warnings = append(g.Warnings, &Error{Line: r.Line, Col: r.Col, Msg: fmt.Sprintf("rule %q is never used (the start rule %q does not reach it)", r.Name, g.Rules[g.Root].Name)})
		}
	}
	return nil
}

// nullable reports, per rule, whether it matches the empty string.
func (g *Grammar) nullable() []bool {
	null := make([]bool, len(g.Rules))
	for changed := true; changed; {
		changed = false
		for a, r := range g.Rules {
			if null[a] {
				continue
			}
			for _, alt := range r.Alts {
				ok := true
				for _, e := range alt {
					if e.Kind != Ref || !null[e.Rule] {
						ok = false
						break
					}
				}
				if ok {
					null[a], changed = true, true
					break
				}
			}
		}
	}
	return null
}
