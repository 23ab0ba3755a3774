package planinfo

import (
	"sort"
	"strings"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs/chips"
)

// Report is everything inspect says of a plan.
type Report struct {
	File     string             `json:"file"`
	Compiler string             `json:"compiler"`
	Model    Model              `json:"model"`
	Target   plans.Target       `json:"target"`
	Memory   Memory             `json:"memory"`
	Programs map[string]Program `json:"programs"`
	// BytesPerToken is what one decoded token reads from memory: the sum of
	// the decode program's commands' BytesRead.
	BytesPerToken uint64 `json:"bytes_per_token"`
	// CacheBytesPerToken is the part of BytesPerToken that the decode
	// attention commands read from the KV cache, counted at the plan's
	// whole context: a decode at a shorter context reads that part in
	// proportion (akunu bench counts it so).
	CacheBytesPerToken uint64 `json:"cache_bytes_per_token"`
	// RooflineTokS is the decode speed memory bandwidth allows:
	// bandwidth / bytes_per_token; 0 when the target's bandwidth is unknown.
	RooflineTokS float64 `json:"roofline_tok_s"`
}

// Model names the model file the plan replays over.
type Model struct {
	File         string `json:"file"`
	Size         uint64 `json:"size"`
	Architecture string `json:"architecture"`
	Ctx          uint32 `json:"ctx"`
}

// Memory is the plan's memory by buffer kind, in bytes, and whether it fits
// each memory size the chip is sold with.
type Memory struct {
	Weights   uint64 `json:"weights"`
	Derived   uint64 `json:"derived"`
	KV        uint64 `json:"kv"`
	KVType    string `json:"kv_type,omitempty"` // the KV cache's element type: f16, q8_0, f32
	Scratch   uint64 `json:"scratch"`
	IO        uint64 `json:"io"`
	Constants uint64 `json:"constants"`
	Params    uint64 `json:"params"`
	Total     uint64 `json:"total"`
	// Fits lists, per memory size sold with the chip, the estimated Metal
	// working set (recommendedMaxWorkingSetSize) and whether Total fits it.
	// Empty for targets without a known memory size (CPUs).
	Fits []Fit `json:"fits,omitempty"`
}

// Fit is one memory configuration of the chip.
type Fit struct {
	MemoryGB   int    `json:"memory_gb"`
	WorkingSet uint64 `json:"working_set"`
	Fits       bool   `json:"fits"`
}

// Program is one program of the plan.
type Program struct {
	Batch     uint32    `json:"batch"`
	BytesRead uint64    `json:"bytes_read"`
	Commands  []Command `json:"commands"`
}

// Command is one command of a program.
type Command struct {
	Index             int       `json:"index"`
	Kernel            string    `json:"kernel"`
	Label             string    `json:"label"`
	Rule              string    `json:"rule,omitempty"`
	Grid              [3]uint32 `json:"grid"`
	Threadgroup       [3]uint32 `json:"threadgroup"`
	ThreadgroupMemory uint32    `json:"threadgroup_memory,omitempty"`
	BytesRead         uint64    `json:"bytes_read"`
	Patches           []string  `json:"patches,omitempty"`
}

// Describe builds the report of a plan. file is the path it was read from.
func Describe(file string, p *plans.Plan) *Report {
	r := &Report{
		File: file, Compiler: p.Header.Compiler, Target: p.Header.Target,
		Model: Model{File: p.Header.Model.File, Size: p.Header.Model.Size,
			Architecture: p.Model.HParams.Arch, Ctx: p.Model.HParams.Ctx},
		Programs: map[string]Program{},
	}
	for _, b := range p.Buffers {
		switch b.Kind {
		case plans.BufWeight:
			r.Memory.Weights += b.Size
		case plans.BufDerived:
			r.Memory.Derived += b.Size
		case plans.BufKV:
			r.Memory.KV += b.Size
			r.Memory.KVType = strings.ToLower(b.DType)
		case plans.BufScratch:
			r.Memory.Scratch += b.Size
		case plans.BufIO:
			r.Memory.IO += b.Size
		case plans.BufConstant:
			r.Memory.Constants += b.Size
		case plans.BufParams:
			r.Memory.Params += b.Size
		}
		r.Memory.Total += b.Size
	}
	r.Memory.Fits = fits(p.Header.Target, r.Memory.Total)
	for _, pr := range p.Programs {
		out := Program{Batch: pr.Batch, Commands: make([]Command, 0, len(pr.Commands))}
		for i, c := range pr.Commands {
			cmd := Command{Index: i, Label: c.Label, Rule: c.Rule, Grid: c.Grid, Threadgroup: c.Threadgroup,
				ThreadgroupMemory: c.ThreadgroupMemory, BytesRead: c.BytesRead}
			if int(c.Pipeline) < len(p.Pipelines) {
				cmd.Kernel = p.Pipelines[c.Pipeline].Kernel
			}
			for _, pt := range c.Patches {
				cmd.Patches = append(cmd.Patches, pt.Kind.String())
			}
			out.BytesRead += c.BytesRead
			out.Commands = append(out.Commands, cmd)
		}
		r.Programs[pr.Name] = out
	}
	r.BytesPerToken = r.Programs[plans.ProgDecode].BytesRead
	for _, c := range r.Programs[plans.ProgDecode].Commands {
		if kernels.ReadsWholeCache(c.Kernel) {
			r.CacheBytesPerToken += c.BytesRead
		}
	}
	if bw := p.Header.Target.BandwidthGBs; bw > 0 && r.BytesPerToken > 0 {
		r.RooflineTokS = bw * 1e9 / float64(r.BytesPerToken)
	}
	return r
}

// fits estimates, for each memory size the chip is sold with, whether the
// plan's buffers fit the Metal working set macOS grants by default.
func fits(t plans.Target, total uint64) []Fit {
	prof, err := chips.Resolve(t.Chip, int(t.CPUCores))
	if err != nil || prof.Kind != chips.GPU {
		return nil
	}
	sizes := append([]int(nil), prof.MemoryGB...)
	sort.Ints(sizes)
	var out []Fit
	for _, gb := range sizes {
		mem := chips.Bytes(gb) * chips.GiB
		ws := uint64(float64(mem) * chips.WorkingSetShare(mem))
		out = append(out, Fit{MemoryGB: gb, WorkingSet: ws, Fits: total <= ws})
	}
	return out
}

// EmbedPrograms counts the report's embedding programs.
func (r *Report) EmbedPrograms() int {
	n := 0
	for name := range r.Programs {
		if strings.HasPrefix(name, plans.EmbedPrefix) {
			n++
		}
	}
	return n
}

// ProgramNames lists the report's programs: decode, sampled, then the
// batch (or format 1 prefill) buckets by rows.
func (r *Report) ProgramNames() []string {
	names := make([]string, 0, len(r.Programs))
	for n := range r.Programs {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch n {
		case plans.ProgDecode:
			return 0
		case plans.ProgSampled:
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := names[i], names[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if r.Programs[a].Batch != r.Programs[b].Batch {
			return r.Programs[a].Batch < r.Programs[b].Batch
		}
		return a < b
	})
	return names
}
