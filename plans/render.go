package plans

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// RenderOptions adjust Render.
type RenderOptions struct {
	// Params, when set, decodes a command's parameter bytes into fields
	// ("n = 4096") for the kernel it names; the kernel catalog provides one.
	// Returning nil falls back to hex.
	Params func(kernel string, params []byte) []string
}

// Render writes the plan's stable text form: the header and model as
// "key: value" lines named as in FORMAT.md, then one line per buffer and
// pipeline, then each program command by command, one fact per line. The
// output depends only on the plan (no pointers, no map order), so CI diffs
// it across chips and commits it as golden files. Long values (the
// vocabulary, embedded constants) are summarized by count and SHA-256.
func (p *Plan) Render(w io.Writer) error { return p.RenderWith(w, RenderOptions{}) }

// RenderWith is Render with options.
func (p *Plan) RenderWith(w io.Writer, o RenderOptions) error {
	bw := bufio.NewWriter(w)
	r := renderer{w: bw, p: p, o: o}
	r.all()
	return bw.Flush()
}

type renderer struct {
	w *bufio.Writer
	p *Plan
	o RenderOptions
}

func (r *renderer) line(format string, args ...any) {
	fmt.Fprintf(r.w, format, args...)
	r.w.WriteByte('\n')
}

func (r *renderer) all() {
	p := r.p
	// A plan built in memory has no versions yet: show what Encode writes.
	format, minRT := p.Header.Format, p.Header.MinRuntime
	if format == 0 {
		format, minRT = FormatVersion, p.RequiredRuntime()
	}
	r.line("akunu plan format %d, min runtime %d", format, minRT)
	flatten("header.", &p.Header, func(k, v string) { r.line("%s: %s", k, v) })
	flatten("model.", &p.Model, func(k, v string) { r.line("%s: %s", k, v) })

	r.line("")
	var total uint64
	byKind := map[BufferKind]uint64{}
	for _, b := range p.Buffers {
		total += b.Size
		byKind[b.Kind] += b.Size
	}
	var kinds []string
	for k := BufferKind(1); k < bufKindEnd; k++ {
		if byKind[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, byKind[k]))
		}
	}
	r.line("buffers: %d, %d bytes (%s)", len(p.Buffers), total, strings.Join(kinds, ", "))
	for i := range p.Buffers {
		r.line("buffer %d %s: %s", i, p.Buffers[i].Name, p.bufferSummary(i))
	}

	r.line("")
	r.line("pipelines: %d", len(p.Pipelines))
	for i, pl := range p.Pipelines {
		r.line("pipeline %d %s", i, pl.Key)
	}
	for i := range p.Programs {
		r.line("")
		r.program(&p.Programs[i])
	}
}

// bufferSummary is one buffer's description in one line.
func (p *Plan) bufferSummary(i int) string {
	b := &p.Buffers[i]
	var s strings.Builder
	s.WriteString(b.Kind.String())
	if b.DType != "" {
		s.WriteString(" " + b.DType)
	}
	if len(b.Shape) > 0 {
		fmt.Fprintf(&s, " %v", b.Shape)
	}
	fmt.Fprintf(&s, " %d B", b.Size)
	switch b.Kind {
	case BufWeight:
		fmt.Fprintf(&s, ", tensor %s at %d", b.Tensor, b.Offset)
	case BufDerived:
		fmt.Fprintf(&s, ", %s(%s)", b.Recipe, strings.Join(p.bufferNames(b.Sources), ", "))
	case BufConstant:
		fmt.Fprintf(&s, ", data %s", formatBytes(b.Data))
	case BufKV:
		fmt.Fprintf(&s, ", layer %d %s", b.Layer, b.Half)
	case BufIO:
		fmt.Fprintf(&s, ", role %s", b.Role)
	}
	return s.String()
}

func (p *Plan) bufferName(i uint32) string {
	if int(i) < len(p.Buffers) {
		return p.Buffers[i].Name
	}
	return fmt.Sprintf("#%d", i)
}

func (p *Plan) bufferNames(idx []uint32) []string {
	names := make([]string, len(idx))
	for j, i := range idx {
		names[j] = p.bufferName(i)
	}
	return names
}

func (p *Plan) kernel(c *Command) string {
	if int(c.Pipeline) < len(p.Pipelines) {
		return p.Pipelines[c.Pipeline].Kernel
	}
	return fmt.Sprintf("#%d", c.Pipeline)
}

func (r *renderer) program(pr *Program) {
	p := r.p
	var read uint64
	for _, c := range pr.Commands {
		read += c.BytesRead
	}
	roof := ""
	if bw := p.Header.Target.BandwidthGBs; bw > 0 && read > 0 {
		roof = fmt.Sprintf(", roofline %.4g replays/s at %g GB/s", bw*1e9/float64(read), bw)
	}
	out := ""
	if pr.KindOf() == KindBatch {
		out = fmt.Sprintf(", out rows %d", pr.Outputs())
	}
	r.line("program %s: %s, batch %d%s, %d commands, %d bytes read per replay%s", pr.Name, pr.KindOf(), pr.Batch, out, len(pr.Commands), read, roof)
	for i := range pr.Commands {
		c := &pr.Commands[i]
		r.line("%s[%d] %s", pr.Name, i, c.Label)
		for _, f := range p.commandFacts(c, r.o) {
			r.line("  %s: %s", f.key, f.value)
		}
	}
}

// fact is one line of a command's description: a key that names what it
// is about ("grid", "bind 2", "patch 0") and its value. Diff compares
// commands fact by fact.
type fact struct{ key, value string }

// commandFacts describes a command, one fact per line.
func (p *Plan) commandFacts(c *Command, o RenderOptions) []fact {
	var fs []fact
	add := func(key, format string, args ...any) { fs = append(fs, fact{key, fmt.Sprintf(format, args...)}) }
	add("kernel", "%s", p.kernel(c))
	if int(c.Pipeline) < len(p.Pipelines) {
		if cs := p.Pipelines[c.Pipeline].Constants; len(cs) > 0 {
			parts := make([]string, len(cs))
			for i, k := range cs {
				parts[i] = k.String()
			}
			add("constants", "%s", strings.Join(parts, " "))
		}
	}
	unit := "threadgroups"
	if c.DispatchThreads {
		unit = "threads"
	}
	add("grid", "%d %d %d %s", c.Grid[0], c.Grid[1], c.Grid[2], unit)
	add("threadgroup", "%d %d %d", c.Threadgroup[0], c.Threadgroup[1], c.Threadgroup[2])
	if c.ThreadgroupMemory != 0 {
		add("threadgroup_memory", "%d", c.ThreadgroupMemory)
	}
	for _, b := range c.Bindings {
		v := fmt.Sprintf("%s+%d", p.bufferName(b.Buffer), b.Offset)
		if b.Length != 0 {
			v += fmt.Sprintf(" (%d B)", b.Length)
		}
		add(fmt.Sprintf("bind %d", b.Slot), "%s", v)
	}
	if len(c.Params) > 0 || c.ParamsSlot != 0 {
		var fields []string
		if o.Params != nil {
			fields = o.Params(p.kernel(c), c.Params)
		}
		if fields == nil {
			add(fmt.Sprintf("params %d", c.ParamsSlot), "%s", hexWords(c.Params))
		}
		for i, f := range fields {
			add(fmt.Sprintf("param %d.%d", c.ParamsSlot, i), "%s", f)
		}
	}
	for i, pt := range c.Patches {
		add(fmt.Sprintf("patch %d", i), "%s", pt.describe())
	}
	if c.Rule != "" {
		add("rule", "%s", c.Rule)
	}
	add("reads", "%d", c.BytesRead)
	return fs
}

// describe renders a patch: "position: param [0,4) = 0 + 1×pos".
func (pt Patch) describe() string {
	x := map[PatchKind]string{
		PatchToken: "i", PatchPosition: "pos", PatchKVLength: "(pos+batch)", PatchPositionKV: "pos, (pos+batch)",
		PatchArgmaxSlot: "(i+1)", PatchBatchLength: "batch", PatchStartPosition: "pos", PatchSeq: "seq", PatchOutCount: "out",
	}[pt.Kind]
	if x == "" {
		x = "?"
	}
	switch pt.Target {
	case PatchParam:
		return fmt.Sprintf("%s: param [%d,%d) = %d + %d×%s", pt.Kind, pt.At,
			uint64(pt.At)+pt.count()*uint64(pt.Width), pt.Base, pt.Stride, x)
	case PatchBinding:
		return fmt.Sprintf("%s: binding %d offset = %d + %d×%s", pt.Kind, pt.At, pt.Base, pt.Stride, x)
	}
	return fmt.Sprintf("%s: %s %d width %d = %d + %d×%s", pt.Kind, pt.Target, pt.At, pt.Width, pt.Base, pt.Stride, x)
}

// hexWords renders parameter bytes as little-endian 32-bit words in hex,
// the shape most parameter structs have, with a short tail as bytes.
func hexWords(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		if i > 0 {
			s.WriteByte(' ')
		}
		end := min(i+4, len(b))
		s.WriteString(hex.EncodeToString(b[i:end]))
	}
	if s.Len() == 0 {
		return "(none)"
	}
	return s.String()
}

// flatten walks a record's scalar fields in schema order and emits each as
// prefix+name and its formatted value; nested records extend the prefix,
// maps emit one line per key, and lists of records are skipped (Render and
// Diff lay those out themselves).
func flatten(prefix string, r record, emit func(key, value string)) {
	for _, f := range r.fields() {
		key := prefix + f.name
		switch v := f.ptr.(type) {
		case enum:
			emit(key, v.String())
		case record:
			flatten(key+".", v, emit)
		case seq:
		case *map[string]string:
			keys := make([]string, 0, len(*v))
			for k := range *v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				emit(key+"."+k, formatString((*v)[k]))
			}
		default:
			emit(key, formatValue(f.ptr))
		}
	}
}

// maxListed is the longest list rendered element by element; longer ones
// are summarized.
const maxListed = 16

func formatValue(ptr any) string {
	switch v := ptr.(type) {
	case *bool:
		return strconv.FormatBool(*v)
	case *uint8:
		return strconv.FormatUint(uint64(*v), 10)
	case *uint32:
		return strconv.FormatUint(uint64(*v), 10)
	case *uint64:
		return strconv.FormatUint(*v, 10)
	case *int32:
		return strconv.FormatInt(int64(*v), 10)
	case *float32:
		return strconv.FormatFloat(float64(*v), 'g', -1, 32)
	case *float64:
		return strconv.FormatFloat(*v, 'g', -1, 64)
	case *string:
		return formatString(*v)
	case *[]byte:
		return formatBytes(*v)
	case *[32]byte:
		return hex.EncodeToString(v[:])
	case *[3]uint32:
		return fmt.Sprintf("%d %d %d", v[0], v[1], v[2])
	case *[]string:
		return formatList(*v, func(s string) string { return formatString(s) })
	case *[]bool:
		return formatList(*v, strconv.FormatBool)
	case *[]uint32:
		return formatList(*v, func(x uint32) string { return strconv.FormatUint(uint64(x), 10) })
	case *[]uint64:
		return formatList(*v, func(x uint64) string { return strconv.FormatUint(x, 10) })
	case *[]int32:
		return formatList(*v, func(x int32) string { return strconv.FormatInt(int64(x), 10) })
	case *[]float32:
		return formatList(*v, func(x float32) string { return strconv.FormatFloat(float64(x), 'g', -1, 32) })
	}
	return fmt.Sprintf("%v", ptr)
}

// formatList lists a short slice, and summarizes a long one by its length
// and the SHA-256 of its formatted elements, so that any change to a
// 150,000-token vocabulary still shows in a diff.
func formatList[T any](s []T, f func(T) string) string {
	if len(s) <= maxListed {
		parts := make([]string, len(s))
		for i, x := range s {
			parts[i] = f(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	h := sha256.New()
	for _, x := range s {
		io.WriteString(h, f(x))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("<%d items, sha256 %s>", len(s), hashPrefix(h.Sum(nil)))
}

// formatString shows a plain string as is, a short odd one quoted, and a
// long or multi-line one by its length and digest.
func formatString(s string) string {
	plain := s != "" && len(s) <= 80 && strings.TrimSpace(s) == s &&
		!strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == '"' || r == 0x7f || r == '\uFFFD' })
	switch {
	case plain:
		return s
	case len(s) <= 80 && !strings.Contains(s, "\n"):
		return strconv.Quote(s)
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("<%d bytes, sha256 %s>", len(s), hashPrefix(sum[:]))
}

func formatBytes(b []byte) string {
	if len(b) <= 16 {
		return "[" + hex.EncodeToString(b) + "]"
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("<%d bytes, sha256 %s>", len(b), hashPrefix(sum[:]))
}
