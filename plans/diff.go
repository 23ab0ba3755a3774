package plans

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// DiffKind says whether something was added, removed or changed.
type DiffKind uint8

const (
	Changed DiffKind = iota
	Added
	Removed
)

// Difference is one thing that differs between two plans. Path names it in
// the words of Render: "header.target.tuning.chain_chunk", "buffer kv.L0.k
// size", "decode L3.attn.qkv grid", "pipeline gemv_q4_0_l|0:u32=4096".
// Old and New are the rendered values (New alone when added, Old alone
// when removed).
type Difference struct {
	Kind     DiffKind
	Path     string
	Old, New string
}

func (d Difference) String() string {
	switch d.Kind {
	case Added:
		return d.Path + ": added " + d.New
	case Removed:
		return d.Path + ": removed " + d.Old
	}
	return d.Path + ": " + d.Old + " → " + d.New
}

// WriteDiff writes the differences one per line; nothing when there are
// none.
func WriteDiff(w io.Writer, ds []Difference) error {
	bw := bufio.NewWriter(w)
	for _, d := range ds {
		bw.WriteString(d.String())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Diff says what differs between plans a and b, semantically: header and
// tuning values, model, buffers by name, pipelines by key, programs by name
// and, within a program, commands by label. It is empty when the plans
// render the same.
//
// Labels are the key that aligns commands: the compiler names a command
// after the graph node it computes ("L3.attn.qkv"), and a node keeps its
// name across chips and compiler versions. Commands sharing a label form a
// group (a node lowered to several dispatches, or the parts of a fusion the
// other plan does not make, when the compiler labels them after the fused
// node); groups of equal size are compared command by command, others are
// reported as one change from the old commands to the new. Indices
// (buffers, pipelines, commands) never appear: a buffer added at the front
// shifts every index but changes nothing the diff reports.
func Diff(a, b *Plan) []Difference { return DiffWith(a, b, RenderOptions{}) }

// DiffWith is Diff with rendering options: with o.Params, parameter bytes
// are compared field by field ("kv_stride = 1024 → kv_stride = 1536")
// instead of as hex words.
func DiffWith(a, b *Plan, o RenderOptions) []Difference {
	ds := diffs{o: o}
	ds.changed("format", fmt.Sprint(a.Header.Format), fmt.Sprint(b.Header.Format))
	ds.changed("min_runtime", fmt.Sprint(a.Header.MinRuntime), fmt.Sprint(b.Header.MinRuntime))
	ds.facts("", flatFacts("header.", &a.Header), flatFacts("header.", &b.Header))
	ds.facts("", flatFacts("model.", &a.Model), flatFacts("model.", &b.Model))
	ds.buffers(a, b)
	ds.pipelines(a, b)
	ds.programs(a, b)
	return ds.list
}

type diffs struct {
	list []Difference
	o    RenderOptions
}

func (ds *diffs) changed(path, old, new string) {
	if old != new {
		ds.list = append(ds.list, Difference{Changed, path, old, new})
	}
}

func (ds *diffs) added(path, new string) { ds.list = append(ds.list, Difference{Added, path, "", new}) }
func (ds *diffs) removed(path, old string) {
	ds.list = append(ds.list, Difference{Removed, path, old, ""})
}

func flatFacts(prefix string, r record) []fact {
	var fs []fact
	flatten(prefix, r, func(k, v string) { fs = append(fs, fact{k, v}) })
	return fs
}

// facts compares two fact lists by key: a's order first, then b's new keys.
func (ds *diffs) facts(prefix string, a, b []fact) {
	bv := make(map[string]string, len(b))
	for _, f := range b {
		bv[f.key] = f.value
	}
	av := make(map[string]bool, len(a))
	for _, f := range a {
		av[f.key] = true
		if nv, ok := bv[f.key]; ok {
			ds.changed(prefix+f.key, f.value, nv)
		} else {
			ds.removed(prefix+f.key, f.value)
		}
	}
	for _, f := range b {
		if !av[f.key] {
			ds.added(prefix+f.key, f.value)
		}
	}
}

// bufferFacts is a buffer's fields by name, with its sources as names.
func (p *Plan) bufferFacts(i int) []fact {
	b := &p.Buffers[i]
	fs := flatFacts("", b)
	for j := range fs {
		if fs[j].key == "sources" {
			fs[j].value = "[" + strings.Join(p.bufferNames(b.Sources), " ") + "]"
		}
	}
	return fs
}

func (ds *diffs) buffers(a, b *Plan) {
	bi := make(map[string]int, len(b.Buffers))
	for i, x := range b.Buffers {
		bi[x.Name] = i
	}
	ai := make(map[string]bool, len(a.Buffers))
	for i, x := range a.Buffers {
		ai[x.Name] = true
		j, ok := bi[x.Name]
		if !ok {
			ds.removed("buffer "+x.Name, a.bufferSummary(i))
			continue
		}
		ds.facts("buffer "+x.Name+" ", a.bufferFacts(i), b.bufferFacts(j))
	}
	for j, x := range b.Buffers {
		if !ai[x.Name] {
			ds.added("buffer "+x.Name, b.bufferSummary(j))
		}
	}
}

func (ds *diffs) pipelines(a, b *Plan) {
	in := func(p *Plan) map[string]bool {
		m := make(map[string]bool, len(p.Pipelines))
		for _, x := range p.Pipelines {
			m[x.Key] = true
		}
		return m
	}
	ak, bk := in(a), in(b)
	for _, x := range a.Pipelines {
		if !bk[x.Key] {
			ds.removed("pipeline "+x.Key, x.Kernel)
		}
	}
	for _, x := range b.Pipelines {
		if !ak[x.Key] {
			ds.added("pipeline "+x.Key, x.Kernel)
		}
	}
}

func (ds *diffs) programs(a, b *Plan) {
	for i := range a.Programs {
		pa := &a.Programs[i]
		pb := b.Program(pa.Name)
		if pb == nil {
			ds.removed("program "+pa.Name, fmt.Sprintf("(%d commands)", len(pa.Commands)))
			continue
		}
		ds.program(a, b, pa, pb)
	}
	for i := range b.Programs {
		if a.Program(b.Programs[i].Name) == nil {
			ds.added("program "+b.Programs[i].Name, fmt.Sprintf("(%d commands)", len(b.Programs[i].Commands)))
		}
	}
}

// group is the commands of one label, in program order.
type group struct {
	label string
	cmds  []*Command
}

func groups(pr *Program) ([]*group, map[string]*group) {
	var order []*group
	by := map[string]*group{}
	for i := range pr.Commands {
		c := &pr.Commands[i]
		g := by[c.Label]
		if g == nil {
			g = &group{label: c.Label}
			by[c.Label] = g
			order = append(order, g)
		}
		g.cmds = append(g.cmds, c)
	}
	return order, by
}

func readTotal(pr *Program) uint64 {
	var n uint64
	for _, c := range pr.Commands {
		n += c.BytesRead
	}
	return n
}

func (ds *diffs) program(a, b *Plan, pa, pb *Program) {
	name := pa.Name
	ds.changed(name+" batch", fmt.Sprint(pa.Batch), fmt.Sprint(pb.Batch))
	ds.changed(name+" commands", fmt.Sprint(len(pa.Commands)), fmt.Sprint(len(pb.Commands)))
	ds.changed(name+" bytes read", fmt.Sprint(readTotal(pa)), fmt.Sprint(readTotal(pb)))
	ga, byA := groups(pa)
	gb, byB := groups(pb)
	var commonA, commonB []string
	for _, g := range ga {
		h := byB[g.label]
		if h == nil {
			ds.removed(name+" "+g.label, a.groupSummary(g))
			continue
		}
		commonA = append(commonA, g.label)
		if len(g.cmds) != len(h.cmds) {
			ds.changed(name+" "+g.label, a.groupSummary(g), b.groupSummary(h))
			continue
		}
		for k := range g.cmds {
			path := name + " " + g.label
			if len(g.cmds) > 1 {
				path += fmt.Sprintf("#%d", k)
			}
			ds.facts(path+" ", a.commandFacts(g.cmds[k], ds.o), b.commandFacts(h.cmds[k], ds.o))
		}
	}
	for _, g := range gb {
		if byA[g.label] == nil {
			ds.added(name+" "+g.label, b.groupSummary(g))
		} else {
			commonB = append(commonB, g.label)
		}
	}
	// The labels both have, in a different order: report the first place
	// they part.
	for i := range commonA {
		if commonA[i] != commonB[i] {
			ds.changed(name+" order", fmt.Sprintf("%s before %s", commonA[i], commonB[i]),
				fmt.Sprintf("%s before %s", commonB[i], commonA[i]))
			break
		}
	}
}

// groupSummary: "1 command gemv_q8_0", "3 commands gemv_q8_0, gemv_q8_0, gemv_q8_0".
func (p *Plan) groupSummary(g *group) string {
	ks := make([]string, len(g.cmds))
	for i, c := range g.cmds {
		ks[i] = p.kernel(c)
	}
	noun := "commands"
	if len(ks) == 1 {
		noun = "command"
	}
	return fmt.Sprintf("%d %s %s", len(ks), noun, strings.Join(ks, ", "))
}
