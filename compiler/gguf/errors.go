package gguf

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns about a file's contents
// wraps exactly one of the first five, so callers can tell a file that is cut
// short from one that lies, and both from one we refuse by policy.
var (
	// ErrNotGGUF: the file does not start with the GGUF magic.
	ErrNotGGUF = errors.New("not a GGUF file")
	// ErrUnsupportedVersion: a GGUF version this package does not read (v1,
	// a future version, or a byte-swapped big-endian file).
	ErrUnsupportedVersion = errors.New("unsupported GGUF version")
	// ErrTruncated: a count, length or extent reaches past the end of the file.
	ErrTruncated = errors.New("truncated file")
	// ErrCorrupt: the bytes are there but say something impossible (a bad
	// type code, a duplicate key, overlapping tensors, an overflow).
	ErrCorrupt = errors.New("corrupt file")
	// ErrLimit: the file may be well-formed but exceeds a bound this reader
	// (or GGML) enforces, such as the nesting depth or the tensor name length.
	ErrLimit = errors.New("exceeds a reader limit")

	// ErrMissingKey: a metadata key asked for by name is absent.
	ErrMissingKey = errors.New("missing metadata key")
	// ErrWrongType: a metadata key holds a value of another type than asked.
	ErrWrongType = errors.New("metadata value has the wrong type")

	// ErrInvalid: a Builder was given something it cannot write.
	ErrInvalid = errors.New("invalid GGUF content")
)

// FormatError is a problem at a place in a file. Its message reads
//
//	gguf: tensor "blk.3.ffn_up.weight" at offset 1234: data [...) lies outside the file (size N)
//
// It unwraps to Kind and Cause, where set. Kind is one of the sentinels above
// whenever the file's contents are at fault; only a failed read (an I/O
// error, in Cause) has none.
type FormatError struct {
	Where  string // `key "general.alignment"`, `tensor "output.weight"`, "header", ...
	Offset int64  // byte offset in the file that the problem concerns
	Msg    string
	Kind   error // a sentinel: ErrTruncated, ErrCorrupt, ...; nil for I/O errors
	Cause  error // an underlying error (I/O, dtype), or nil
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("gguf: %s at offset %d: %s", e.Where, e.Offset, e.Msg)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the sentinel kind and the cause, for errors.Is and errors.As.
func (e *FormatError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func errAt(kind error, where string, off int64, format string, args ...any) *FormatError {
	return &FormatError{Where: where, Offset: off, Msg: fmt.Sprintf(format, args...), Kind: kind}
}

func keyWhere(key string) string     { return "key " + quote(key) }
func tensorWhere(name string) string { return "tensor " + quote(name) }

// quote quotes a name read from a file for a message, cut short so that a
// hostile 64 KiB key does not make a 64 KiB error.
func quote(s string) string {
	const max = 96
	if len(s) > max {
		return fmt.Sprintf("%q...(%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
