//go:build linux

package cuda

import (
	"fmt"
	"io"
	"sort"
	"unsafe"
)

// profiler times every launch with a pair of events (AKUNU_CUDA_PROFILE=1;
// chains then launch from the host) and sums the GPU time by kernel. It is
// a developer's tool: it allocates and synchronizes after every Encode.
type profiler struct {
	pending []profLaunch
	byName  map[string]*profStat
	spare   []uintptr
	// res is each compiled kernel's registers per thread and local
	// (spilled, or dynamically indexed array) bytes per thread, by entry
	// name: local memory on a hot path is a kernel body to fix.
	res map[string][2]int32
}

// note records the resources of kernel name's compiled function fn.
func (pr *profiler) note(b *Backend, name string, fn uintptr) {
	var regs, local int32
	b.d.call(b.d.cuFuncGetAttribute, uintptr(unsafe.Pointer(&regs)), funcNumRegs, fn)
	b.d.call(b.d.cuFuncGetAttribute, uintptr(unsafe.Pointer(&local)), funcLocalBytes, fn)
	if pr.res == nil {
		pr.res = map[string][2]int32{}
	}
	pr.res[name] = [2]int32{regs, local}
}

type profLaunch struct {
	name   string
	e0, e1 uintptr
}

type profStat struct {
	n   int
	sum float64 // milliseconds
}

func (b *Backend) profEvent() uintptr {
	pr := b.prof
	if n := len(pr.spare); n > 0 {
		e := pr.spare[n-1]
		pr.spare = pr.spare[:n-1]
		return e
	}
	var e uintptr
	b.d.call(b.d.cuEventCreate, uintptr(unsafe.Pointer(&e)), 0)
	return e
}

// around records events before and after launch runs.
func (b *Backend) around(name string, launch func() int) int {
	e0, e1 := b.profEvent(), b.profEvent()
	b.d.call(b.d.cuEventRecord, e0, b.strm)
	r := launch()
	b.d.call(b.d.cuEventRecord, e1, b.strm)
	b.prof.pending = append(b.prof.pending, profLaunch{name, e0, e1})
	return r
}

// collect waits for the recorded launches and adds their times.
func (b *Backend) collect() {
	pr := b.prof
	b.d.call(b.d.cuStreamSynchronize, b.strm)
	for _, l := range pr.pending {
		var ms float32
		b.d.call(b.d.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), l.e0, l.e1)
		st := pr.byName[l.name]
		if st == nil {
			st = &profStat{}
			pr.byName[l.name] = st
		}
		st.n++
		st.sum += float64(ms)
		pr.spare = append(pr.spare, l.e0, l.e1)
	}
	pr.pending = pr.pending[:0]
}

// report writes the kernels by GPU time, most first.
func (pr *profiler) report(w io.Writer) {
	type row struct {
		name string
		st   *profStat
	}
	var rows []row
	total := 0.0
	for n, st := range pr.byName {
		rows = append(rows, row{n, st})
		total += st.sum
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].st.sum > rows[j].st.sum })
	fmt.Fprintf(w, "cuda profile: %.1f ms of kernels\n", total)
	for i, r := range rows {
		if i == 20 {
			break
		}
		res := ""
		if rs, ok := pr.res[r.name]; ok {
			res = fmt.Sprintf("  (%d regs, %d B local)", rs[0], rs[1])
		}
		fmt.Fprintf(w, "  %6.1f%%  %9.3f ms  %7d launches  %8.2f µs each  %s%s\n", 100*r.st.sum/total, r.st.sum, r.st.n, 1000*r.st.sum/float64(r.st.n), r.name, res)
	}
}
