package metal

import "fmt"

// PageSize is the VM page size of Apple silicon (16 KiB): the alignment
// newBufferWithBytesNoCopy demands of both the pointer and the length.
const PageSize = 16 << 10

// span is the page-aligned region that wraps a host range without a copy:
// Start and Length are what newBufferWithBytesNoCopy gets, Offset is where
// the range begins inside it (added to every binding's offset).
type span struct {
	Start  uintptr
	Length uintptr
	Offset uint64
}

// pageSpan rounds [addr, addr+n) out to whole pages of size page (a power
// of two): the start down, the end up. The caller guarantees those pages
// are mapped: a range inside an mmap whose base is page-aligned always
// is, because the kernel maps whole pages (the tail of the last one reads
// as zeros).
func pageSpan(addr uintptr, n int, page uintptr) (span, error) {
	if page == 0 || page&(page-1) != 0 {
		return span{}, fmt.Errorf("metal: page size %d is not a power of two", page)
	}
	if n < 0 || addr+uintptr(n) < addr {
		return span{}, fmt.Errorf("metal: range of %d bytes at %#x overflows", n, addr)
	}
	start := addr &^ (page - 1)
	end := (addr + uintptr(n) + page - 1) &^ (page - 1)
	if end < start+page { // an empty range still wraps one page
		end = start + page
	}
	return span{Start: start, Length: end - start, Offset: uint64(addr - start)}, nil
}
