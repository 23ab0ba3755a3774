package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"io"
	"math"
	"math/bits"
)

// cursor is a bounded, forward-only reader over the header of a file. Every
// read is checked against the bytes that remain before it is made; the bytes
// it consumes are hashed, so that the header identity costs no second pass.
//
// It reads ahead in windows of up to readWindow bytes, so it may read (but
// never keeps or hashes) up to that many bytes past the end of the header.
type cursor struct {
	r    io.ReaderAt
	size int64 // the file size the caller vouched for
	off  int64 // absolute offset of the next unread byte

	win    []byte // buffered bytes, starting at winOff
	winOff int64
	h      hash.Hash

	where string // what is being read, for errors: `key "x"`, `tensor "y"`
}

const readWindow = 64 << 10

func newCursor(r io.ReaderAt, size int64) *cursor {
	return &cursor{r: r, size: size, h: sha256.New(), where: "header"}
}

func (c *cursor) remaining() int64 { return c.size - c.off }

// need fails with ErrTruncated unless n more bytes remain. what says what the
// bytes are for ("string of 12 bytes").
func (c *cursor) need(n int64, what string) error {
	if n < 0 || n > c.remaining() {
		return errAt(ErrTruncated, c.where, c.off, "%s needs %d bytes, but only %d remain in the file", what, uint64(n), c.remaining())
	}
	return nil
}

// take returns the next n bytes, valid until the next call. The caller has
// already checked n against remaining, and n <= readWindow.
func (c *cursor) take(n int) ([]byte, error) {
	start := c.off - c.winOff
	if c.off < c.winOff || start+int64(n) > int64(len(c.win)) {
		if err := c.fill(n); err != nil {
			return nil, err
		}
		start = 0
	}
	b := c.win[start : start+int64(n)]
	c.off += int64(n)
	c.h.Write(b)
	return b, nil
}

// fill reloads the window at c.off with at least n bytes.
func (c *cursor) fill(n int) error {
	want := int64(readWindow)
	if rem := c.remaining(); want > rem {
		want = rem
	}
	if want < int64(n) {
		return c.need(int64(n), "read")
	}
	if cap(c.win) < int(want) {
		// Only the first fill allocates: what remains only shrinks.
		c.win = make([]byte, want)
	}
	c.win = c.win[:want]
	c.winOff = c.off
	got, err := c.r.ReadAt(c.win, c.off)
	c.win = c.win[:got]
	if got >= n {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errAt(ErrTruncated, c.where, c.off+int64(got), "file ends before its stated size %d", c.size)
	}
	// Not a fault of the file's contents, so no sentinel: just the cause.
	return &FormatError{Where: c.where, Offset: c.off, Msg: "read failed", Cause: err}
}

// long reads n bytes that may exceed the window into a fresh slice; n has
// been checked against remaining, which the file size vouches for.
func (c *cursor) long(n int64) ([]byte, error) {
	if err := c.need(n, "read"); err != nil {
		return nil, err
	}
	out := make([]byte, 0, n)
	for int64(len(out)) < n {
		chunk := min(n-int64(len(out)), readWindow)
		b, err := c.take(int(chunk))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func (c *cursor) u8(what string) (uint8, error) {
	if err := c.need(1, what); err != nil {
		return 0, err
	}
	b, err := c.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (c *cursor) u16(what string) (uint16, error) {
	if err := c.need(2, what); err != nil {
		return 0, err
	}
	b, err := c.take(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (c *cursor) u32(what string) (uint32, error) {
	if err := c.need(4, what); err != nil {
		return 0, err
	}
	b, err := c.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (c *cursor) u64(what string) (uint64, error) {
	if err := c.need(8, what); err != nil {
		return 0, err
	}
	b, err := c.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a length-prefixed string of at most max bytes. A length over max
// is ErrLimit; a length past the end of the file is ErrTruncated. Both are
// reported before anything is allocated.
func (c *cursor) str(what string, max uint64) (string, error) {
	at := c.off
	n, err := c.u64(what) // "key needs 8 bytes": no concatenation on the hot path
	if err != nil {
		return "", err
	}
	if n > max {
		return "", errAt(ErrLimit, c.where, at, "%s of %d bytes is longer than the %d allowed", what, n, max)
	}
	if n > uint64(c.remaining()) {
		return "", errAt(ErrTruncated, c.where, at, "%s of %d bytes runs past the end of the file (%d bytes remain)", what, n, c.remaining())
	}
	if n <= readWindow {
		b, err := c.take(int(n))
		return string(b), err
	}
	b, err := c.long(int64(n))
	return string(b), err
}

// sum is the SHA-256 of every byte consumed so far.
func (c *cursor) sum() (out [32]byte) {
	c.h.Sum(out[:0])
	return out
}

// Checked arithmetic for offsets and sizes read from files.

// mulCount returns n*size, or false when it overflows an int64.
func mulCount(n uint64, size int64) (int64, bool) {
	if size < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(n, uint64(size))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// addOff returns a+b for non-negative offsets, or false when it overflows.
func addOff(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}

// alignUp rounds x up to a multiple of the power of two a, or false on overflow.
func alignUp(x, a int64) (int64, bool) {
	y, ok := addOff(x, a-1)
	if !ok {
		return 0, false
	}
	return y &^ (a - 1), true
}
