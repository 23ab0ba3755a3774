package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Builder assembles a GGUF v3 file: metadata in the order it is set, tensors
// in the order they are added, each tensor's data aligned and padded the way
// llama.cpp expects (it requires the data packed in table order). The output
// depends only on what was set and added, so the same calls give the same
// bytes.
//
// Like bufio.Writer, a Builder remembers the first error: later calls do
// nothing, and Err, WriteTo and WriteFile return it. Each error names the key
// or tensor it concerns.
type Builder struct {
	kvs     []KV
	keys    map[string]int
	tensors []pending
	names   map[string]int
	err     error
}

// pending is a tensor waiting to be written, with its source of bytes.
type pending struct {
	info  TensorInfo
	data  []byte                  // AddTensor
	write func(w io.Writer) error // AddTensorFunc
	zero  bool                    // AddZeroTensor
}

// NewBuilder returns an empty Builder (alignment DefaultAlignment).
func NewBuilder() *Builder {
	return &Builder{keys: map[string]int{}, names: map[string]int{}}
}

// Err is the first error the Builder met, if any.
func (b *Builder) Err() error { return b.err }

func (b *Builder) fail(where, format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("gguf: %s: %s: %w", where, fmt.Sprintf(format, args...), ErrInvalid)
	}
}

// Set sets a metadata key. Setting a key again replaces its value and keeps
// its place. Setting general.alignment changes the alignment of the data.
func (b *Builder) Set(key string, v Value) {
	if b.err != nil {
		return
	}
	where := keyWhere(key)
	switch {
	case key == "":
		b.fail("metadata", "empty key")
		return
	case len(key) > MaxKeyLen:
		b.fail(where, "key of %d bytes is longer than the %d allowed", len(key), MaxKeyLen)
		return
	}
	if err := checkValue(v, 0); err != nil {
		b.fail(where, "%v", err)
		return
	}
	if key == alignmentKey {
		a, _ := v.Uint()
		if v.Type() != TypeUint32 || a == 0 || a&(a-1) != 0 || a > MaxAlignment {
			b.fail(where, "alignment must be a u32 power of two up to %d, not %s %s", MaxAlignment, describe(v), v)
			return
		}
	}
	if i, ok := b.keys[key]; ok {
		b.kvs[i].Value = v
		return
	}
	b.keys[key] = len(b.kvs)
	b.kvs = append(b.kvs, KV{Key: key, Value: v})
}

// SetString sets a string value.
func (b *Builder) SetString(key, v string) { b.Set(key, String(v)) }

// SetUint32 sets a u32 value (the type most hyperparameters have).
func (b *Builder) SetUint32(key string, v uint32) { b.Set(key, Uint32(v)) }

// SetInt32 sets an i32 value.
func (b *Builder) SetInt32(key string, v int32) { b.Set(key, Int32(v)) }

// SetUint64 sets a u64 value.
func (b *Builder) SetUint64(key string, v uint64) { b.Set(key, Uint64(v)) }

// SetFloat32 sets an f32 value.
func (b *Builder) SetFloat32(key string, v float32) { b.Set(key, Float32(v)) }

// SetBool sets a bool value.
func (b *Builder) SetBool(key string, v bool) { b.Set(key, Bool(v)) }

// SetStrings sets an array of strings.
func (b *Builder) SetStrings(key string, v []string) { b.Set(key, Strings(v)) }

// SetAlignment sets general.alignment: a power of two up to MaxAlignment.
func (b *Builder) SetAlignment(a uint32) { b.Set(alignmentKey, Uint32(a)) }

// alignment is the data alignment the metadata asks for.
func (b *Builder) alignment() int64 {
	if i, ok := b.keys[alignmentKey]; ok {
		a, _ := b.kvs[i].Value.Uint()
		return int64(a)
	}
	return DefaultAlignment
}

// AddTensor adds a tensor whose bytes are data. dims are in GGML order
// (dims[0] varies fastest). data is kept, not copied: do not change it
// before the file is written.
func (b *Builder) AddTensor(name string, t dtype.Type, dims []uint64, data []byte) {
	p, ok := b.add(name, t, dims)
	if !ok {
		return
	}
	if int64(len(data)) != p.info.Size {
		b.fail(tensorWhere(name), "%d bytes of data, but %v %v takes %d", len(data), t, dims, p.info.Size)
		return
	}
	p.data = data
	b.push(p)
}

// AddTensorFunc adds a tensor whose bytes write streams into w when the file
// is written, so that a huge model need never be in memory at once. write
// must write exactly the tensor's size in bytes.
func (b *Builder) AddTensorFunc(name string, t dtype.Type, dims []uint64, write func(w io.Writer) error) {
	p, ok := b.add(name, t, dims)
	if !ok {
		return
	}
	if write == nil {
		b.fail(tensorWhere(name), "nil write function")
		return
	}
	p.write = write
	b.push(p)
}

// AddZeroTensor adds a tensor whose bytes are all zero. WriteTo writes the
// zeros; WriteFile with sparse set skips over them, leaving a hole that
// takes no disk space (on file systems that support holes). This is how a
// shape-only model of 8B parameters fits in a test.
func (b *Builder) AddZeroTensor(name string, t dtype.Type, dims []uint64) {
	p, ok := b.add(name, t, dims)
	if !ok {
		return
	}
	p.zero = true
	b.push(p)
}

// add checks a tensor as Read would, and computes its size.
func (b *Builder) add(name string, t dtype.Type, dims []uint64) (pending, bool) {
	if b.err != nil {
		return pending{}, false
	}
	where := tensorWhere(name)
	switch {
	case name == "":
		b.fail("tensor table", "empty tensor name")
		return pending{}, false
	case len(name) > MaxNameLen:
		b.fail(where, "name of %d bytes is longer than the %d GGML allows", len(name), MaxNameLen)
		return pending{}, false
	case len(dims) > MaxDims:
		b.fail(where, "%d dimensions, more than the %d GGML allows", len(dims), MaxDims)
		return pending{}, false
	}
	if _, dup := b.names[name]; dup {
		b.fail(where, "duplicate tensor name")
		return pending{}, false
	}
	info, ok := t.Lookup()
	if !ok {
		b.fail(where, "unknown type code %d", uint32(t))
		return pending{}, false
	}
	n := uint64(1)
	for _, d := range dims {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > math.MaxInt64 {
			b.fail(where, "shape %v has more elements than an int64 can count", dims)
			return pending{}, false
		}
		n = lo
	}
	row := uint64(1)
	if len(dims) > 0 {
		row = dims[0]
	}
	if row%uint64(info.BlockSize) != 0 {
		b.fail(where, "rows of %d elements are not a whole number of %v blocks (%d elements each)", row, t, info.BlockSize)
		return pending{}, false
	}
	size, err := t.RowBytes(int64(n))
	if err != nil {
		b.fail(where, "%v", err)
		return pending{}, false
	}
	ti := TensorInfo{Name: name, Dims: append([]uint64(nil), dims...), Type: t, Size: size}
	return pending{info: ti}, true
}

func (b *Builder) push(p pending) {
	b.names[p.info.Name] = len(b.tensors)
	b.tensors = append(b.tensors, p)
}

// layout encodes the header and places each tensor: packed in order, each
// starting at a multiple of the alignment. It returns the header (padded to
// the data section), the data offsets, and the file's total size.
func (b *Builder) layout() (header []byte, offsets []int64, total int64, err error) {
	if b.err != nil {
		return nil, nil, 0, b.err
	}
	align := b.alignment()
	offsets = make([]int64, len(b.tensors))
	var data int64 // size of the data section so far
	for i, p := range b.tensors {
		offsets[i] = data
		end, ok1 := addOff(data, p.info.Size)
		next, ok2 := alignUp(end, align)
		if !ok1 || !ok2 {
			return nil, nil, 0, fmt.Errorf("gguf: %s: data section overflows: %w", tensorWhere(p.info.Name), ErrInvalid)
		}
		data = next
	}
	h := append([]byte(nil), Magic...)
	h = binary.LittleEndian.AppendUint32(h, Version)
	h = binary.LittleEndian.AppendUint64(h, uint64(len(b.tensors)))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(b.kvs)))
	for _, kv := range b.kvs {
		h = appendString(h, kv.Key)
		h = binary.LittleEndian.AppendUint32(h, uint32(kv.Value.typ))
		h = appendValue(h, kv.Value)
	}
	for i, p := range b.tensors {
		h = appendString(h, p.info.Name)
		h = binary.LittleEndian.AppendUint32(h, uint32(len(p.info.Dims)))
		for _, d := range p.info.Dims {
			h = binary.LittleEndian.AppendUint64(h, d)
		}
		h = binary.LittleEndian.AppendUint32(h, uint32(p.info.Type))
		h = binary.LittleEndian.AppendUint64(h, uint64(offsets[i]))
	}
	// llama.cpp's writer pads the header even with no tensors; so do we.
	dataStart, _ := alignUp(int64(len(h)), align)
	h = append(h, make([]byte, dataStart-int64(len(h)))...)
	total, ok := addOff(dataStart, data)
	if !ok {
		return nil, nil, 0, fmt.Errorf("gguf: data section overflows: %w", ErrInvalid)
	}
	return h, offsets, total, nil
}

// WriteTo writes the whole file to w, zeros included.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	err := b.write(cw, nil)
	return cw.n, err
}

// WriteFile writes the file to path, replacing it only once the whole file
// is written (it is written beside path, then renamed). With sparse set,
// AddZeroTensor data is skipped over rather than written. The file gets the
// mode a newly created file gets (0666 less the umask), and errors name
// path, never the temporary file.
func (b *Builder) WriteFile(path string, sparse bool) (err error) {
	if b.err != nil {
		return b.err
	}
	fd, err := createBeside(path)
	if err != nil {
		bare, _ := pathless(err)
		return fmt.Errorf("gguf: writing %s: %w", path, bare)
	}
	defer func() {
		if err != nil {
			fd.Close()
			os.Remove(fd.Name())
			if bare, ok := pathless(err); ok {
				err = fmt.Errorf("gguf: writing %s: %w", path, bare)
			}
		}
	}()
	var seeker *os.File
	if sparse {
		seeker = fd
	}
	bw := bufio.NewWriterSize(fd, 1<<20)
	if err := b.write(bw, &sparseSink{bw: bw, fd: seeker}); err != nil {
		return err
	}
	if err := fd.Close(); err != nil {
		return err
	}
	return os.Rename(fd.Name(), path)
}

// createBeside creates a new hidden file in path's folder, named after it,
// with mode 0666 for the umask to reduce (os.CreateTemp's is 0600).
func createBeside(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for try := 0; ; try++ {
		name := filepath.Join(dir, fmt.Sprintf(".%s.tmp%d", base, rand.Uint32()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return f, err
		}
	}
}

// pathless is err without the file name a *PathError or *LinkError adds,
// which here would be the temporary file's; false (and err) for any other
// error.
func pathless(err error) (error, bool) {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err, true
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err, true
	}
	return err, false
}

// sparseSink lets write skip zero tensors in a file: it flushes the buffer,
// seeks over the zeros, and extends the file at the end.
type sparseSink struct {
	bw *bufio.Writer
	fd *os.File // nil: write zeros
}

func (b *Builder) write(w io.Writer, sink *sparseSink) error {
	header, offsets, total, err := b.layout()
	if err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return fmt.Errorf("gguf: writing the header: %w", err)
	}
	pos := int64(len(header))
	align := b.alignment()
	for i, p := range b.tensors {
		where := tensorWhere(p.info.Name)
		if start := int64(len(header)) + offsets[i]; pos != start {
			return fmt.Errorf("gguf: %s: internal error: writing at %d, laid out at %d", where, pos, start)
		}
		size := p.info.Size
		switch {
		case p.zero && sink != nil && sink.fd != nil:
			if err := sink.bw.Flush(); err != nil {
				return fmt.Errorf("gguf: %s: %w", where, err)
			}
			if _, err := sink.fd.Seek(size, io.SeekCurrent); err != nil {
				return fmt.Errorf("gguf: %s: %w", where, err)
			}
		case p.zero:
			if err := writeZeros(w, size); err != nil {
				return fmt.Errorf("gguf: %s: %w", where, err)
			}
		case p.write != nil:
			lw := &limitWriter{w: w, left: size}
			if err := p.write(lw); err != nil {
				return fmt.Errorf("gguf: %s: %w", where, err)
			}
			if lw.left != 0 {
				return fmt.Errorf("gguf: %s: wrote %d bytes, want %d: %w", where, size-lw.left, size, ErrInvalid)
			}
		default:
			if _, err := w.Write(p.data); err != nil {
				return fmt.Errorf("gguf: %s: %w", where, err)
			}
		}
		pos += size
		end, _ := alignUp(pos, align)
		if err := writeZeros(w, end-pos); err != nil {
			return fmt.Errorf("gguf: %s: padding: %w", where, err)
		}
		pos = end
	}
	if pos != total {
		return fmt.Errorf("gguf: internal error: wrote %d bytes, laid out %d", pos, total)
	}
	if sink != nil {
		if err := sink.bw.Flush(); err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		if sink.fd != nil {
			// A trailing hole is not part of the file until the size says so.
			if err := sink.fd.Truncate(total); err != nil {
				return fmt.Errorf("gguf: %w", err)
			}
		}
	}
	return nil
}

var zeros [64 << 10]byte

func writeZeros(w io.Writer, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// limitWriter passes on at most left bytes and fails past that.
type limitWriter struct {
	w    io.Writer
	left int64
}

var errTooMuch = errors.New("tensor data is longer than its shape says")

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("%w (%d bytes over): %w", errTooMuch, int64(len(p))-l.left, ErrInvalid)
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
