package metal

import "unsafe"

// registry maps the Go slices this backend handed out (Alloc's contents,
// Wrap's mapped bytes) back to their MTLBuffers, so Bind, which sees only
// the plan's buffers as [][]byte, can find the buffer and offset of each.
type registry struct {
	entries []regEntry
}

type regEntry struct {
	start, end uintptr // the Go slice's bytes
	ref        bufRef
}

func (r *registry) add(data []byte, ref bufRef) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	r.entries = append(r.entries, regEntry{start: p, end: p + uintptr(len(data)), ref: ref})
}

// lookup finds the buffer whose slice contains data (a sub-slice binds
// at its offset inside).
func (r *registry) lookup(data []byte) (bufRef, bool) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	end := p + uintptr(len(data))
	for i := len(r.entries) - 1; i >= 0; i-- {
		e := &r.entries[i]
		if p >= e.start && end <= e.end && (p < e.end || len(data) == 0 && p == e.start) {
			ref := e.ref
			ref.base += uint64(p - e.start)
			return ref, true
		}
	}
	return bufRef{}, false
}
