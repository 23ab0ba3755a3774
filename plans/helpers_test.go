package plans

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// UPDATE_GOLDEN=1 rewrites the golden files from what the code produces;
// review them in the diff.
var update = os.Getenv("UPDATE_GOLDEN") != ""

// golden compares got with testdata/name, or rewrites it under UPDATE_GOLDEN.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code produces (UPDATE_GOLDEN=1 rewrites it; review the diff):\n%s",
			path, firstDiff(want, got))
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y []byte
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if !bytes.Equal(x, y) {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + string(x) + "\n  got:  " + string(y)
		}
	}
	return "(equal lines; the bytes differ)"
}

// reseal rewrites the body length and checksum of an encoded plan, so a
// test can change the body (or a version) and reach the decoder.
func reseal(data []byte) []byte {
	out := bytes.Clone(data)
	if len(out) < preambleSize {
		return out
	}
	binary.LittleEndian.PutUint64(out[offBodyLen:], uint64(len(out)-preambleSize))
	sum := checksum(out)
	copy(out[offChecksum:], sum[:])
	return out
}

// mustDecode decodes what the test expects to be a valid plan.
func mustDecode(t testing.TB, data []byte) *Plan {
	t.Helper()
	p, err := Decode("", data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
