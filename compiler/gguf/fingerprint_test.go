package gguf

import (
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

func TestSampleSpans(t *testing.T) {
	for _, size := range []int64{0, 1, SampleBlock, SampleBlocks * SampleBlock, SampleBlocks*SampleBlock + 1, 1 << 20, 123457} {
		spans := SampleSpans(size)
		if size <= SampleBlocks*SampleBlock {
			if len(spans) != 1 || spans[0] != [2]int64{0, size} {
				t.Errorf("size %d: %v, want the whole tensor", size, spans)
			}
			continue
		}
		if len(spans) != SampleBlocks || spans[0][0] != 0 || spans[len(spans)-1][1] != size {
			t.Errorf("size %d: %v, want %d blocks from the first byte to the last", size, spans, SampleBlocks)
		}
		for i, s := range spans {
			if s[1]-s[0] != SampleBlock || i > 0 && s[0] < spans[i-1][1] {
				t.Errorf("size %d: block %d is %v", size, i, s)
			}
		}
	}
}

// bigFile writes a file of three tensors of 256 KiB, so that the sums
// sample rather than read whole tensors.
func bigFile(t *testing.T) string {
	t.Helper()
	b := NewBuilder()
	b.SetString("general.architecture", "llama")
	for _, name := range []string{"a", "b", "c"} {
		b.AddTensor(name, dtype.F32, []uint64{64 << 10}, seq(256<<10))
	}
	path := filepath.Join(t.TempDir(), "big.gguf")
	if err := os.WriteFile(path, mustWrite(t, b), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSumsAreOfTheirTensor(t *testing.T) {
	m, err := Map(bigFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sampled, err := m.SampledSums()
	if err != nil {
		t.Fatal(err)
	}
	full, err := m.FullSums(2)
	if err != nil {
		t.Fatal(err)
	}
	// Equal bytes under other names give other sums: a sum binds its
	// table entry, so two tensors' data swapped is caught.
	if sampled[0] == sampled[1] || full[0] == full[1] || sampled[0] == full[0] {
		t.Errorf("sums of equal bytes under other names or kinds agree: %x %x %x", sampled[0][:4], sampled[1][:4], full[0][:4])
	}
	// Read with pread or through the mapping, the sums agree.
	for i := range m.Tensors {
		if mapped, err := m.sumOne(i, false); err != nil || mapped != sampled[i] {
			t.Errorf("tensor %d: the sampled sum through the mapping differs from the one read: %v", i, err)
		}
	}
	again, err := m.FullSums(1)
	if err != nil || again[2] != full[2] {
		t.Errorf("full sums depend on the workers: %v", err)
	}
}

// TestAFileThatShrinksUnderItsMappingIsAnError truncates a mapped file: the
// size check says so, and reading the lost pages is ErrFault, not SIGBUS.
func TestAFileThatShrinksUnderItsMappingIsAnError(t *testing.T) {
	path := bigFile(t)
	m, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.CheckSize(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, m.DataOffset); err != nil {
		t.Fatal(err)
	}
	if err := m.CheckSize(); !errors.Is(err, ErrTruncated) {
		t.Errorf("CheckSize: %v", err)
	}
	if _, err := m.FullSums(2); !errors.Is(err, ErrTruncated) {
		t.Errorf("FullSums: %v", err)
	}
	// Past the size check, as if the file shrank between it and the read.
	_, err = m.sumOne(2, true)
	// Only a real mapping faults; elsewhere the file was read into memory.
	mmapFaults := goruntime.GOOS == "linux" || goruntime.GOOS == "darwin"
	if mmapFaults && !errors.Is(err, ErrFault) {
		t.Errorf("reading a page past the end: %v", err)
	}
}
