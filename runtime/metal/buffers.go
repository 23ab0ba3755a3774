package metal

import (
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/runtime/device"
)

// table holds a backend's live objects by handle id (index + 1), reusing
// the ids of freed entries first, as runtime/cpu's tables do: the runtime
// frees and binds per model while the backend outlives each one. Looking
// an entry up allocates nothing.
type table[T any] struct {
	items []T
	live  []bool
	free  []int
}

// add stores v and returns its id (≥ 1).
func (t *table[T]) add(v T) int {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		t.items[i], t.live[i] = v, true
		return i + 1
	}
	t.items = append(t.items, v)
	t.live = append(t.live, true)
	return len(t.items)
}

// get is the entry of id, in place; false for none or a freed one.
func (t *table[T]) get(id int) (*T, bool) {
	i := id - 1
	if i < 0 || i >= len(t.items) || !t.live[i] {
		return nil, false
	}
	return &t.items[i], true
}

// remove frees id and returns what it held.
func (t *table[T]) remove(id int) (T, bool) {
	var zero T
	p, ok := t.get(id)
	if !ok {
		return zero, false
	}
	v := *p
	*p = zero
	t.live[id-1] = false
	t.free = append(t.free, id-1)
	return v, true
}

// each calls f on every live entry (Close releases them).
func (t *table[T]) each(f func(*T)) {
	for i := range t.items {
		if t.live[i] {
			f(&t.items[i])
		}
	}
}

// bufRef is a device buffer as a binding or a blit sees it: the MTLBuffer
// and the byte offset of the buffer's first byte inside it (non-zero for
// a no-copy wrap whose start was rounded down to a page, align.go).
type bufRef struct {
	id   uintptr
	base uint64
}

// bufEntry is one buffer of the table: its MTLBuffer and base, the bytes
// the handle holds, and where the host sees its first byte (the shared
// buffer's contents plus base, or the mapped file's bytes), which Write
// and Read copy through.
type bufEntry struct {
	bufRef
	size int
	host unsafe.Pointer
}

// buffers is the backend's buffer table.
type buffers struct{ table[bufEntry] }

// ref is the entry behind handle h: false for a handle this backend did not
// make, or one freed since (a reused id holds another size, mostly; the
// size check is what can be had for free).
func (t *buffers) ref(h device.Buffer) (*bufEntry, bool) {
	e, ok := t.get(h.ID())
	if !ok || e.size != h.Size() {
		return nil, false
	}
	return e, true
}

// bytes is buffer h as the host sees it; nil for no buffer.
func (t *buffers) bytes(h device.Buffer) []byte {
	e, ok := t.ref(h)
	if !ok || e.host == nil {
		return nil
	}
	return unsafe.Slice((*byte)(e.host), e.size)
}

// write copies src into dst at byte off, through the host's view of the
// shared buffer: the runtime calls it only while nothing that uses dst is
// in flight, so no synchronization is needed. Only the error path
// allocates.
func (t *buffers) write(dst device.Buffer, off int, src []byte) error {
	d := t.bytes(dst)
	if d == nil {
		return fmt.Errorf("metal: write into buffer %d, which this backend did not make: %w", dst.ID(), ErrUnsupported)
	}
	if off < 0 || off > len(d)-len(src) {
		return fmt.Errorf("metal: write of %d bytes at %d into a buffer of %d", len(src), off, len(d))
	}
	copy(d[off:], src)
	return nil
}

// read copies len(dst) bytes of src from byte off (write's conditions).
func (t *buffers) read(dst []byte, src device.Buffer, off int) error {
	s := t.bytes(src)
	if s == nil {
		return fmt.Errorf("metal: read from buffer %d, which this backend did not make: %w", src.ID(), ErrUnsupported)
	}
	if off < 0 || off > len(s)-len(dst) {
		return fmt.Errorf("metal: read of %d bytes at %d from a buffer of %d", len(dst), off, len(s))
	}
	copy(dst, s[off:])
	return nil
}

// piece is one source of a concat_rows buffer: its entry and where its
// bytes go in the new buffer. blit says whether a blit encoder may copy it
// (offsets and size multiples of 4, Metal's rule for buffer copies on
// macOS); the others are copied by the host, which sees both buffers'
// memory (shared storage, or the mapped file).
type piece struct {
	src    bufEntry
	dstOff int
	blit   bool
}

// concatRows lays srcs out one after the other in a buffer of size bytes:
// their sizes must add up to size exactly.
func (t *buffers) concatRows(srcs []device.Buffer, size int) ([]piece, error) {
	ps := make([]piece, 0, len(srcs))
	off := 0
	for i, s := range srcs {
		e, ok := t.ref(s)
		if !ok {
			return nil, fmt.Errorf("metal: concat_rows: source %d is not a buffer of this backend: %w", i, ErrUnsupported)
		}
		if off+e.size > size {
			return nil, fmt.Errorf("metal: concat_rows: sources of %d+ bytes for %d", off+e.size, size)
		}
		ps = append(ps, piece{src: *e, dstOff: off, blit: off%4 == 0 && e.size%4 == 0 && e.base%4 == 0})
		off += e.size
	}
	if off != size {
		return nil, fmt.Errorf("metal: concat_rows: sources give %d of %d bytes", off, size)
	}
	return ps, nil
}
