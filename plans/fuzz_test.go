package plans

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// frame wraps a body in a valid preamble.
func frame(body []byte) []byte {
	out := make([]byte, preambleSize, preambleSize+len(body))
	copy(out, Magic)
	out[offVersion], out[offMinRT] = FormatVersion, 1
	return reseal(append(out, body...))
}

// encodeUntil writes Example's body up to the field at path (field names,
// descending into records), declaring the records' full field counts, so
// that the test's bytes land where that field's value belongs. With extra
// > 0 the top-level record declares that many more fields.
func encodeUntil(extra int, path ...string) []byte {
	e := newEncoder()
	var walk func(r record, path []string, extra int)
	walk = func(r record, path []string, extra int) {
		fs := r.fields()
		e.m.EncodeArrayLen(len(fs) + extra)
		for _, f := range fs {
			if len(path) > 0 && f.name == path[0] {
				if len(path) > 1 {
					walk(f.ptr.(record), path[1:], 0)
				}
				return
			}
			e.value(f.ptr)
		}
	}
	walk(Example(), path, extra)
	return e.buf.Bytes()
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var huge32 = []byte{0xff, 0xff, 0xff, 0xff}

// hostileBodies are bodies whose headers claim far more than they hold.
func hostileBodies() map[string][]byte {
	return map[string][]byte{
		"a top-level array of 2^32-1": cat([]byte{0xdd}, huge32),
		"2^32-1 buffers":              cat(encodeUntil(0, "buffers"), []byte{0xdd}, huge32),
		"65536 buffers in 10 bytes":   cat(encodeUntil(0, "buffers"), []byte{0xdd, 0x00, 0x01, 0x00, 0x00}, bytes.Repeat([]byte{0x9d}, 10)),
		"a 4 GiB compiler string":     cat(encodeUntil(0, "header", "compiler"), []byte{0xdb}, huge32, []byte("a")),
		"a 4 GiB tensor table hash":   cat(encodeUntil(0, "header", "model", "header_sha256"), []byte{0xc6}, huge32),
		"a million token strings":     cat(encodeUntil(0, "model", "tokenizer", "tokens"), []byte{0xdd, 0x00, 0x0f, 0x42, 0x40}, bytes.Repeat([]byte{0xa0}, 1000)),
		"a million scores in 1000 bytes": cat(encodeUntil(0, "model", "tokenizer", "scores"), []byte{0xdd, 0x00, 0x0f, 0x42, 0x40},
			bytes.Repeat([]byte{0xca, 0, 0, 0, 0}, 200)),
		"a map of 2^32-1 tuning extras": cat(encodeUntil(0, "header", "target", "tuning", "extra"), []byte{0xdf}, huge32),
		"a 4 GiB tuning key":            cat(encodeUntil(0, "header", "target", "tuning", "extra"), []byte{0x81, 0xdb}, huge32),
		"a constant of 4 GiB": cat(encodeUntil(0, "buffers"), []byte{0x91, 0x9d, 0xa1, 'c', 0x03, 0x04, 0xa0, 0x90, 0xa0, 0x00, 0xa0, 0x90, 0xc6},
			huge32),
		"an unknown field nested 100k deep":     cat(encodeUntil(1), bytes.Repeat([]byte{0x91}, 100000), []byte{0xc0}),
		"an unknown field of an extension type": cat(encodeUntil(1), []byte{0xd4, 0x01, 0x02}),
	}
}

// TestHostileInputIsBounded: every hostile body is refused as corrupt,
// quickly, without allocating more than a small multiple of its size.
func TestHostileInputIsBounded(t *testing.T) {
	for name, body := range hostileBodies() {
		t.Run(name, func(t *testing.T) {
			data := frame(body)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Decode("", data)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if alloc, budget := after.TotalAlloc-before.TotalAlloc, uint64(64*len(data)+1<<20); alloc > budget {
				t.Errorf("allocated %d bytes for a %d-byte input (budget %d)", alloc, len(data), budget)
			}
			if elapsed > time.Second {
				t.Errorf("took %v", elapsed)
			}
			t.Log(err)
		})
	}
}

func TestDeepNestingIsRefused(t *testing.T) {
	_, err := Decode("", frame(hostileBodies()["an unknown field nested 100k deep"]))
	if err == nil || !strings.Contains(err.Error(), "nested more than 32 deep") {
		t.Fatalf("got %v", err)
	}
}

// fuzzBases are the inputs FuzzDecode edits: a whole plan, a smaller one,
// half a plan, other versions, a GGUF file, nothing, and the hostile
// bodies (the 100k-deep nesting at 40 levels: the limit is 32, and
// TestHostileInputIsBounded runs the 100k). Sorted by name, so that an
// input's base index means the same base in every run.
func fuzzBases() [][]byte {
	good := Encode(Example())
	small := Example()
	small.Programs = small.Programs[:1]
	small.Model.Tokenizer = Tokenizer{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1}
	bases := map[string][]byte{
		"0 example":        good,
		"1 small":          Encode(small),
		"2 half":           reseal(good[:len(good)/2]),
		"3 format 2":       withVersions(good, 2, 1),
		"4 format 3 min 3": withVersions(good, 3, 3),
		"5 gguf":           []byte("GGUF\x03\x00\x00\x00"),
		"6 empty":          {},
	}
	for name, body := range hostileBodies() {
		if len(body) > 16<<10 {
			body = cat(encodeUntil(1), bytes.Repeat([]byte{0x91}, 40), []byte{0xc0})
		}
		bases["7 "+name] = frame(body)
	}
	names := slices.Sorted(maps.Keys(bases))
	out := make([][]byte, len(names))
	for i, n := range names {
		out[i] = bases[n]
	}
	return out
}

// applyEdits applies an edit script to a copy of base: 4 bytes an edit,
// an op, a little-endian offset (modulo the length) and a value. Op%4 0
// sets the byte, 1 inserts the value, 2 deletes the byte, 3 truncates
// there.
func applyEdits(base, edits []byte) []byte {
	data := bytes.Clone(base)
	for ; len(edits) >= 4; edits = edits[4:] {
		op, v := edits[0]%4, edits[3]
		off := int(binary.LittleEndian.Uint16(edits[1:]))
		if len(data) == 0 {
			if op == 1 {
				data = append(data, v)
			}
			continue
		}
		off %= len(data)
		switch op {
		case 0:
			data[off] = v
		case 1:
			data = slices.Insert(data, off, v)
		case 2:
			data = slices.Delete(data, off, off+1)
		case 3:
			data = data[:off]
		}
	}
	return data
}

// FuzzDecode: no input panics, hangs or allocates out of proportion, and
// whatever decodes is valid, re-encodes to a plan that decodes to the same
// bytes, and renders and diffs. reseal fixes up the length and checksum
// first, so that the fuzzer reaches the body decoder and Validate instead
// of stopping at the checksum.
//
// An input is a base (fuzzBases, by index; past the last, none: edits are
// the whole input) and an edit script, not a whole plan: Go's minimizer
// tries O(n²) cuts of every input that finds new coverage, so the
// offspring of a 10 KiB seed kept a worker minimizing at 0 execs/s for all
// of -fuzzminimizetime (60 s), longer than make test's 10 s of fuzzing.
// Scripts of a few dozen bytes minimize in milliseconds.
func FuzzDecode(f *testing.F) {
	bases := fuzzBases()
	for i := range bases {
		f.Add(uint8(i), []byte{}, false)
		f.Add(uint8(i), []byte{0, 0x40, 0, 0x7f}, true)
	}
	f.Add(uint8(0), []byte{3, 0x00, 0x14, 0}, true) // half the example, resealed
	f.Add(uint8(255), []byte("AKUNUPLN"), false)
	f.Fuzz(func(t *testing.T, base uint8, edits []byte, fix bool) {
		data := edits
		if int(base) < len(bases) {
			data = applyEdits(bases[base], edits)
		}
		if fix {
			data = reseal(data)
		}
		start := time.Now()
		p, err := Decode("fuzz.plan", data)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Decode took %v on %d bytes", d, len(data))
		}
		if err != nil {
			if !errors.Is(err, ErrNotPlan) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooNew) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		again := Encode(p)
		q, err := Decode("again", again)
		if err != nil {
			t.Fatalf("a decoded plan re-encodes to something that does not decode: %v", err)
		}
		if !bytes.Equal(Encode(q), again) {
			t.Fatal("encoding is not stable across a round trip")
		}
		var b bytes.Buffer
		if err := p.Render(&b); err != nil {
			t.Fatal(err)
		}
		// A newer plan re-encodes as this version, without what it skipped.
		p.Header.Format, p.Header.MinRuntime = q.Header.Format, q.Header.MinRuntime
		if ds := Diff(p, q); len(ds) != 0 {
			t.Fatalf("a plan differs from its round trip: %v", ds[0])
		}
	})
}
