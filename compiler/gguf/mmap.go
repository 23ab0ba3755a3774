package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
)

// Mapping is a GGUF file mapped read-only into memory, with its header
// parsed. Tensor data is handed out as slices of the mapping: no copies, and
// pages are read only when touched. The mapping starts at the beginning of the
// file, so it is page-aligned (what Metal's no-copy buffers need).
//
// The slices are valid until Close. Truncating the file while it is mapped
// makes touching the lost pages fault (SIGBUS): CheckSize notices a file
// that shrank, and the weight sums (fingerprint.go) turn a fault into
// ErrFault; other readers of the slices still crash.
type Mapping struct {
	*File
	data   []byte
	unmap  func([]byte) error
	closed bool
	// fd stays open while mapped, so that CheckSize can fstat the file the
	// mapping is of, even after it was renamed or replaced.
	fd   *os.File
	path string
}

// Map opens the GGUF file at path, maps all of it read-only and parses its
// header from the mapping (so the header and the data are one consistent
// view of the file).
func Map(path string) (*Mapping, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		fd.Close()
		return nil, fmt.Errorf("gguf: %s: not a regular file", path)
	}
	data, unmap, err := mapFile(fd, st.Size())
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("gguf: map %s: %w", path, err)
	}
	m := &Mapping{data: data, unmap: unmap, fd: fd, path: path}
	f, err := m.readHeader()
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.File = f
	return m, nil
}

// readHeader parses the header from the mapping; a fault while doing so
// (the file shrank between the fstat and the read) is an error.
func (m *Mapping) readHeader() (f *File, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			f, err = nil, fmt.Errorf("gguf: reading the header faulted: the file shrank while mapped: %w", ErrFault)
		}
	}()
	return Read(bytes.NewReader(m.data), int64(len(m.data)))
}

// Bytes is the whole file as mapped.
func (m *Mapping) Bytes() []byte { return m.data }

// Data returns the bytes of a tensor of this file, or nil if t does not lie
// inside the mapping (a TensorInfo from another file, or after Close). The
// slice's capacity ends with the tensor, so appending to it cannot write
// into the next one (the mapping is read-only; writing faults).
func (m *Mapping) Data(t *TensorInfo) []byte {
	if t == nil || t.FileOffset < 0 || t.Size < 0 || t.FileOffset > int64(len(m.data)) || t.Size > int64(len(m.data))-t.FileOffset {
		return nil
	}
	return m.data[t.FileOffset : t.FileOffset+t.Size : t.FileOffset+t.Size]
}

// TensorData returns the bytes of the named tensor.
func (m *Mapping) TensorData(name string) ([]byte, error) {
	t, ok := m.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: tensor %s: no such tensor", quote(name))
	}
	if m.closed {
		return nil, errors.New("gguf: mapping is closed")
	}
	return m.Data(t), nil
}

// Close unmaps the file. Slices handed out before become invalid: touching
// them faults. Close is idempotent.
func (m *Mapping) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	data := m.data
	m.data = nil
	var err error
	if len(data) != 0 {
		err = m.unmap(data)
	}
	if m.fd != nil {
		m.fd.Close()
		m.fd = nil
	}
	return err
}
