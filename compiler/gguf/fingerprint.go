package gguf

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"sync"
)

// Weight sums: what lets a plan tell the weights it was compiled against
// from others behind the same header (ADR 0013). Two per tensor, both
// SHA-256 over a prefix that binds the tensor's table entry (name, type,
// shape, file offset, size) and then its bytes:
//
//   - the sampled sum reads SampleBlocks blocks of SampleBlock bytes: the
//     first, the last and the rest evenly spaced (a tensor of at most
//     SampleBlocks×SampleBlock bytes is read whole). Any rewrite of a whole
//     tensor (a sign flip, zeroing, another tensor's data) changes it; a
//     change between the blocks does not. It reads ~32 KiB a tensor, so a
//     load checks it every time.
//   - the full sum reads every byte, for `akunu verify-model` and
//     --verify-weights.
//
// Changing what is hashed is a new SumScheme; a plan records the scheme it
// was written with and a runtime checks only a scheme it knows.
const (
	SumScheme    = "akunu-weights/1: sha256, 8 blocks of 4096 bytes"
	SampleBlock  = 4096
	SampleBlocks = 8
)

// ErrFault: reading the mapping faulted, because the file shrank (or its
// storage failed) after it was mapped.
var ErrFault = errors.New("mapped file faulted")

// sumPrefix hashes what binds a sum to its tensor table entry.
func sumPrefix(t *TensorInfo) [32]byte {
	var b []byte
	b = append(b, SumScheme...)
	b = append(b, 0)
	b = append(b, t.Name...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Type))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Dims)))
	for _, d := range t.Dims {
		b = binary.LittleEndian.AppendUint64(b, d)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(t.FileOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Size))
	return sha256.Sum256(b)
}

// SampleSpans are the [start, end) ranges, relative to a tensor's data, that
// its sampled sum reads: all of a tensor of at most SampleBlocks blocks,
// else SampleBlocks blocks from first to last, evenly spaced.
func SampleSpans(size int64) [][2]int64 {
	if size <= SampleBlocks*SampleBlock {
		return [][2]int64{{0, size}}
	}
	spans := make([][2]int64, SampleBlocks)
	for i := range spans {
		off := int64(i) * (size - SampleBlock) / (SampleBlocks - 1)
		spans[i] = [2]int64{off, off + SampleBlock}
	}
	return spans
}

// tensorSum hashes t's prefix and the spans of data (t's bytes).
func tensorSum(t *TensorInfo, data []byte, full bool) [32]byte {
	h := sha256.New()
	p := sumPrefix(t)
	h.Write(p[:])
	if full {
		h.Write(data)
	} else {
		for _, s := range SampleSpans(int64(len(data))) {
			h.Write(data[s[0]:s[1]])
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// SampledSums are the sampled sums of every tensor, in table order.
//
// They are read with pread, not through the mapping: a fault on a mapped
// page reads ahead (128 KiB and more), so touching 8 blocks of every tensor
// of a model not in the page cache would read most of it; 4 KiB reads read
// 4 KiB. sampleReaders of them are in flight at once, for the disk's queue.
func (m *Mapping) SampledSums() ([][32]byte, error) {
	return m.sums(false, sampleReaders)
}

// sampleReaders is how many sampled reads are in flight: I/O, not CPU.
const sampleReaders = 8

// FullSums are the SHA-256 sums of every byte of every tensor, in table
// order, hashed by up to workers goroutines (0: one a CPU).
func (m *Mapping) FullSums(workers int) ([][32]byte, error) {
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	return m.sums(true, workers)
}

func (m *Mapping) sums(full bool, workers int) ([][32]byte, error) {
	if m.closed {
		return nil, errors.New("gguf: mapping is closed")
	}
	if err := m.CheckSize(); err != nil {
		return nil, err
	}
	out := make([][32]byte, len(m.Tensors))
	// Largest first, so the workers finish together.
	order := make([]int, len(m.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(m.Tensors[b].Size, m.Tensors[a].Size) })
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	work := func() {
		defer wg.Done()
		var buf []byte
		if !full {
			buf = make([]byte, SampleBlocks*SampleBlock)
		}
		for {
			mu.Lock()
			if next >= len(order) || first != nil {
				mu.Unlock()
				return
			}
			i := order[next]
			next++
			mu.Unlock()
			var sum [32]byte
			var err error
			if full {
				sum, err = m.sumOne(i, true)
			} else {
				sum, err = m.sampledSum(i, buf)
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			out[i] = sum
		}
	}
	workers = max(min(workers, len(order)), 1)
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return out, nil
}

// sampledSum hashes tensor i's sampled blocks, read with pread into buf
// (SampleBlocks×SampleBlock bytes). A file that shrank is a short read,
// never a fault.
func (m *Mapping) sampledSum(i int, buf []byte) ([32]byte, error) {
	t := &m.Tensors[i]
	if m.fd == nil {
		return m.sumOne(i, false)
	}
	h := sha256.New()
	p := sumPrefix(t)
	h.Write(p[:])
	for _, s := range SampleSpans(t.Size) {
		b := buf[:s[1]-s[0]]
		if _, err := m.fd.ReadAt(b, t.FileOffset+s[0]); err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrTruncated
			}
			return [32]byte{}, fmt.Errorf("gguf: %s: reading tensor %s at [%d, %d): %w", m.path, quote(t.Name), t.FileOffset+s[0], t.FileOffset+s[1], err)
		}
		h.Write(b)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}

// sumOne hashes tensor i. A fault while reading the mapping (the file
// shrank under it: SIGBUS) is turned into an error rather than a crash:
// SetPanicOnFault makes it a panic on this goroutine, which we recover.
func (m *Mapping) sumOne(i int, full bool) (sum [32]byte, err error) {
	t := &m.Tensors[i]
	data := m.Data(t)
	if data == nil {
		return sum, fmt.Errorf("gguf: %s: tensor %s lies outside the mapping: %w", m.path, quote(t.Name), ErrTruncated)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			var addr uintptr
			if a, ok := r.(interface{ Addr() uintptr }); ok {
				addr = a.Addr()
			} else {
				panic(r) // not a memory fault: a bug, not the file
			}
			err = fmt.Errorf("gguf: %s: reading tensor %s faulted (address %#x): the file shrank or its storage failed after it was mapped: %w",
				m.path, quote(t.Name), addr, ErrFault)
			if serr := m.CheckSize(); serr != nil {
				err = fmt.Errorf("%w (%w)", serr, ErrFault)
			}
		}
	}()
	return tensorSum(t, data, full), nil
}

// CheckSize fails when the file is now shorter than its mapping: touching
// a page past its new end would fault. It is one fstat of the descriptor
// the mapping keeps open, cheap enough for before every generation.
func (m *Mapping) CheckSize() error {
	if m.fd == nil {
		return nil
	}
	size, err := fileSize(m.fd)
	if err != nil {
		return fmt.Errorf("gguf: %s: fstat: %w", m.path, err)
	}
	if size < int64(len(m.data)) {
		return fmt.Errorf("gguf: %s shrank from %d to %d bytes while mapped; the weights past byte %d are gone: %w",
			m.path, len(m.data), size, size, ErrTruncated)
	}
	return nil
}
