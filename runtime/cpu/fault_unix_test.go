//go:build linux || darwin

package cpu

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// sumTask reads every byte of data, items of 4 KiB each, on the workers;
// the caller (worker 0) reads the first page only, slowly, so that the
// workers take items and it is they who fault.
type sumTask struct {
	data    []byte
	sums    []int
	touched []bool
}

func (s *sumTask) do(w, i0, i1 int) {
	for i := i0; i < i1; i++ {
		page := s.data[i<<12 : (i+1)<<12]
		if w == 0 {
			page = s.data[:4096]
			time.Sleep(100 * time.Microsecond)
		}
		s.touched[w] = true
		for _, b := range page {
			s.sums[w] += int(b)
		}
	}
}

// TestAFaultOnAWorkerIsRecorded maps a file, truncates it, and splits a
// read of it over the pool: whichever goroutine touches a lost page (the
// caller or a worker), the fault is recorded and reported once, and the
// pool keeps working.
func TestAFaultOnAWorkerIsRecorded(t *testing.T) {
	const size = 1 << 20
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	data, err := syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(data)
	p := newPool(4)
	defer p.close()
	task := &sumTask{data: data, sums: make([]int, 4), touched: make([]bool, 4)}
	p.run(task, size>>12, 1, 1<<12)
	if err := p.takeFault(); err != nil {
		t.Fatalf("an intact file: %v", err)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	clear(task.touched)
	p.run(task, size>>12, 1, 1<<12)
	if err := p.takeFault(); !errors.Is(err, ErrFault) {
		t.Fatalf("a truncated file: %v", err)
	}
	if !slices.Contains(task.touched[1:], true) {
		t.Fatal("no worker took part: the test proves nothing")
	}
	if err := p.takeFault(); err != nil {
		t.Errorf("a fault is reported once: %v", err)
	}
	// The pool still runs work that does not fault.
	task.data = data[:4096]
	p.run(task, 1, 1, 1<<12)
	p.run(task, 1, 1, 1<<12)
	if err := p.takeFault(); err != nil {
		t.Errorf("after the fault: %v", err)
	}
}
