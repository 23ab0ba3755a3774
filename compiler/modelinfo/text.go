package modelinfo

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as a readable set of tables.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }

	p("model\t%s\n", r.File)
	p("file\t%s (%d bytes), GGUF v%d, alignment %d, data at offset %d, %d metadata keys\n",
		Bytes(r.FileSize), r.FileSize, r.GGUFVersion, r.Alignment, r.DataOffset, r.MetadataKeys)
	arch := r.Architecture
	if r.Spec != "" {
		arch += fmt.Sprintf(" (spec archs/%s.yaml)", r.Spec)
	}
	p("architecture\t%s\n", arch)
	if r.Name != "" {
		p("name\t%s\n", r.Name)
	}
	p("parameters\t%s (%d), %s of tensor data\n", Count(r.Parameters), r.Parameters, Bytes(r.TensorBytes))
	tw.Flush()

	fmt.Fprintln(w, "\nhyperparameters")
	if h := r.HParams; h != nil {
		p("  dim\t%d\tlayers\t%d\n", h.Dim, h.Layers)
		p("  heads\t%d\tkv heads\t%d\n", h.Heads, h.KVHeads)
		p("  head dim\t%d\thead dim v\t%d\n", h.HeadDim, h.HeadDimV)
		p("  ffn\t%d\tvocab\t%d\n", h.FFN, h.Vocab)
		p("  ctx train\t%d\ttied output\t%v\n", h.CtxTrain, h.TiedOutput)
		p("  norm\t%s, eps %v\tembed scale\t%v\n", h.Norm, h.NormEps, h.EmbedScale)
		rope := fmt.Sprintf("%s, base %v, dim %d", h.RopeStyle, h.RopeBase, h.RopeDim)
		if h.RopeBaseSWA != 0 {
			rope += fmt.Sprintf(", base %v on sliding layers", h.RopeBaseSWA)
		}
		if s := h.RopeScaling; s != nil {
			rope += fmt.Sprintf(", scaling %s ×%v", s.Type, s.Factor)
			if s.OrigCtx != 0 {
				rope += fmt.Sprintf(" from %d", s.OrigCtx)
			}
		}
		p("  rope\t%s\n", rope)
		if h.SlidingWindow != 0 {
			p("  sliding window\t%d on layers %s\n", h.SlidingWindow, ranges(h.SlidingLayers))
		}
		if h.AttnSoftcap != 0 || h.FinalSoftcap != 0 {
			p("  softcap\tattention %v, logits %v\n", h.AttnSoftcap, h.FinalSoftcap)
		}
	} else {
		p("  unresolved\t%s\n", r.HParamsError)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntokenizer")
	if t := r.Tokenizer; t != nil {
		pre := ""
		if t.Pre != "" {
			pre = ", pre-tokenizer " + t.Pre
		}
		p("  model\t%s%s\n", t.Model, pre)
		p("  tokens\t%d, %d merges, chat template: %v\n", t.VocabSize, t.Merges, yesNo(t.ChatTemplate))
		var ids []string
		for _, s := range []struct {
			name string
			id   *int64
		}{{"bos", t.BOS}, {"eos", t.EOS}, {"eot", t.EOT}, {"unk", t.UNK}, {"pad", t.PAD}} {
			if s.id != nil {
				ids = append(ids, fmt.Sprintf("%s %d", s.name, *s.id))
			}
		}
		if t.AddBOS != nil {
			ids = append(ids, fmt.Sprintf("add bos %v", *t.AddBOS))
		}
		if t.AddEOS != nil {
			ids = append(ids, fmt.Sprintf("add eos %v", *t.AddEOS))
		}
		p("  special\t%s\n", strings.Join(ids, ", "))
	} else {
		p("  none\t\n")
	}
	tw.Flush()

	fmt.Fprintf(w, "\ntensors (%d)\n", len(r.Tensors))
	p("  name\tshape\tdtype\tbytes\n")
	for _, t := range r.Tensors {
		p("  %s\t%s\t%s\t%d\n", t.Name, shape(t.Shape), t.DType, t.Bytes)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nper dtype")
	p("  dtype\ttensors\tparameters\tbytes\n")
	for _, s := range r.DTypes {
		p("  %s\t%d\t%s\t%s\n", s.DType, s.Tensors, Count(s.Parameters), Bytes(s.Bytes))
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func shape(dims []uint64) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = strconv.FormatUint(d, 10)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// ranges prints sorted indices compactly: 0-4,6-10.
func ranges(xs []int) string {
	var out []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j > i {
			out = append(out, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		} else {
			out = append(out, strconv.Itoa(xs[i]))
		}
		i = j + 1
	}
	return strings.Join(out, ",")
}

// Bytes prints a byte count with a binary unit (1.5 MiB).
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Count prints a count with a decimal suffix (260.1K, 1.24B).
func Count(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}
