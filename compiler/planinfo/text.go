package planinfo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/akunu-dev/akunu/compiler/modelinfo"
	"github.com/akunu-dev/akunu/plans"
)

// WriteText prints the report as readable tables. With commands false it
// lists each program's size but not its commands.
func (r *Report) WriteText(w io.Writer, commands bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	b := func(n uint64) string { return modelinfo.Bytes(int64(n)) }

	p("plan\t%s\n", r.File)
	p("compiler\t%s\n", r.Compiler)
	p("model\t%s (%s), %s, context %d\n", r.Model.File, r.Model.Architecture, b(r.Model.Size), r.Model.Ctx)
	t := r.Target
	cores := fmt.Sprintf("%d GPU cores", t.GPUCores)
	if t.Kind == "cpu" {
		cores = fmt.Sprintf("%d CPU cores", t.CPUCores)
	}
	// A CPU profile records no bandwidth or SLC (the machine's memory is
	// not the chip's to know): say so rather than print zeros.
	bw := "bandwidth unknown"
	if t.BandwidthGBs > 0 {
		bw = fmt.Sprintf("%.0f GB/s", t.BandwidthGBs)
	}
	if t.SLCBytes > 0 {
		bw += ", SLC " + b(t.SLCBytes)
	}
	p("target\t%s: %s %s, %s, %s, %s\n", t.Chip, t.Vendor, t.Kind, t.Family, cores, bw)
	tu := t.Tuning
	p("tuning\tfuse weights %v, q4 large-K threshold %d, wide GEMV threshold %d, chain %d, prefill chunk %d, norm threadgroup %d\n",
		tu.FuseWeights, tu.Q4LargeKThreshold, tu.WideGEMVThreshold, tu.ChainChunk, tu.PrefillChunk, tu.NormTG)
	tw.Flush()

	m := r.Memory
	fmt.Fprintln(w, "\nmemory")
	kv := "kv cache, a sequence"
	if m.KVType != "" {
		kv = "kv cache (" + m.KVType + "), a sequence"
	}
	for _, row := range []struct {
		name string
		n    uint64
	}{{"weights", m.Weights}, {"derived weights", m.Derived}, {kv, m.KV}, {"scratch", m.Scratch},
		{"io", m.IO}, {"constants", m.Constants}, {"parameters", m.Params}, {"total", m.Total}} {
		if row.n != 0 || row.name == "total" {
			p("  %s\t%s\t%d bytes\n", row.name, b(row.n), row.n)
		}
	}
	for _, f := range m.Fits {
		verdict := "fits"
		if !f.Fits {
			verdict = "does NOT fit"
		}
		p("  on %d GB\t%s working set\t%s\n", f.MemoryGB, b(f.WorkingSet), verdict)
	}
	tw.Flush()

	if _, ok := r.Programs[plans.ProgDecode]; ok {
		fmt.Fprintln(w, "\ndecode")
		p("  bytes per token\t%s (%d)\n", b(r.BytesPerToken), r.BytesPerToken)
		if r.CacheBytesPerToken > 0 {
			p("  of which KV cache\t%s at the whole context of %d positions; in proportion at fewer\n", b(r.CacheBytesPerToken), r.Model.Ctx)
		}
		if r.RooflineTokS > 0 {
			p("  roofline\t%.1f tok/s at %.0f GB/s\n", r.RooflineTokS, t.BandwidthGBs)
		} else {
			p("  roofline\tnone: the target records no memory bandwidth (CPU profiles do not); akunu bench measures decode speed\n")
		}
	} else {
		fmt.Fprintln(w, "\nan embedding model: embedding programs only (akunu embed), no decode")
	}
	tw.Flush()
	if n := r.EmbedPrograms(); n > 0 {
		fmt.Fprintf(w, "\nembeddings: %d embedding programs (akunu embed)\n", n)
	}

	for _, name := range r.ProgramNames() {
		pr := r.Programs[name]
		fmt.Fprintf(w, "\nprogram %s: batch %d, %d commands, %s read\n", name, pr.Batch, len(pr.Commands), b(pr.BytesRead))
		if !commands {
			continue
		}
		p("  #\tlabel\tkernel\tgrid\tthreadgroup\tread\tpatches\n")
		for _, c := range pr.Commands {
			p("  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Index, c.Label, c.Kernel, dims(c.Grid), dims(c.Threadgroup),
				b(c.BytesRead), strings.Join(c.Patches, ","))
		}
		tw.Flush()
	}
	return tw.Flush()
}

func dims(d [3]uint32) string {
	switch {
	case d[2] > 1:
		return fmt.Sprintf("%dx%dx%d", d[0], d[1], d[2])
	case d[1] > 1:
		return fmt.Sprintf("%dx%d", d[0], d[1])
	}
	return fmt.Sprint(d[0])
}
