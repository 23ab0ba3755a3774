package metal

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/akunu-dev/akunu/runtime/device"
)

func TestTable(t *testing.T) {
	var tb table[string]
	a, b, c := tb.add("a"), tb.add("b"), tb.add("c")
	t.Run("ids count from 1 in order", func(t *testing.T) {
		if a != 1 || b != 2 || c != 3 {
			t.Fatalf("ids %d %d %d", a, b, c)
		}
	})
	t.Run("a freed id is not found and is reused first", func(t *testing.T) {
		if v, ok := tb.remove(b); !ok || v != "b" {
			t.Fatalf("remove gave %q %v", v, ok)
		}
		if _, ok := tb.get(b); ok {
			t.Fatal("a freed id is found")
		}
		if _, ok := tb.remove(b); ok {
			t.Fatal("an id freed twice")
		}
		if id := tb.add("d"); id != b {
			t.Fatalf("new id %d, want the freed %d", id, b)
		}
		if id := tb.add("e"); id != 4 {
			t.Fatalf("new id %d, want 4", id)
		}
	})
	t.Run("ids out of range are not found", func(t *testing.T) {
		for _, id := range []int{0, -1, 5} {
			if _, ok := tb.get(id); ok {
				t.Fatalf("id %d found", id)
			}
		}
	})
	t.Run("each visits the live entries", func(t *testing.T) {
		tb.remove(a)
		var got []string
		tb.each(func(s *string) { got = append(got, *s) })
		if strings.Join(got, " ") != "d c e" {
			t.Fatalf("visited %v", got)
		}
	})
}

// hostBuffers is a table over Go memory, as the darwin backend's is over
// shared buffers' contents.
func hostBuffers(sizes ...int) (*buffers, []device.Buffer, [][]byte) {
	bt := &buffers{}
	var hs []device.Buffer
	var mem [][]byte
	for i, n := range sizes {
		m := make([]byte, n)
		e := bufEntry{bufRef: bufRef{id: uintptr(100 * (i + 1))}, size: n, host: unsafe.Pointer(&m[0])}
		hs = append(hs, device.NewBuffer(bt.add(e), n))
		mem = append(mem, m)
	}
	return bt, hs, mem
}

func TestWriteRead(t *testing.T) {
	bt, hs, mem := hostBuffers(16, 8)
	t.Run("Write lands at its offset of the host's view", func(t *testing.T) {
		if err := bt.write(hs[0], 4, []byte{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if string(mem[0][3:8]) != "\x00\x01\x02\x03\x00" {
			t.Fatalf("memory % x", mem[0])
		}
	})
	t.Run("Read gives back what is there", func(t *testing.T) {
		got := make([]byte, 3)
		if err := bt.read(got, hs[0], 4); err != nil || string(got) != "\x01\x02\x03" {
			t.Fatalf("got % x, %v", got, err)
		}
	})
	for _, tc := range []struct {
		name  string
		h     device.Buffer
		off   int
		n     int
		match string
	}{
		{"past the end", hs[1], 4, 5, "of 5 bytes at 4 into a buffer of 8"},
		{"at a negative offset", hs[1], -1, 1, "at -1"},
		{"of a buffer this backend did not make", device.NewBuffer(9, 8), 0, 1, "did not make"},
		{"of a handle whose size is not its buffer's", device.NewBuffer(hs[1].ID(), 16), 0, 1, "did not make"},
	} {
		t.Run("a write "+tc.name+" is refused", func(t *testing.T) {
			if err := bt.write(tc.h, tc.off, make([]byte, tc.n)); err == nil || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("got %v, want %q", err, tc.match)
			}
		})
		t.Run("a read "+tc.name+" is refused", func(t *testing.T) {
			if err := bt.read(make([]byte, tc.n), tc.h, tc.off); err == nil || !strings.Contains(err.Error(), strings.Replace(tc.match, "into", "from", 1)) {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("Write and Read allocate nothing", func(t *testing.T) {
		src, dst := []byte{1, 2, 3, 4}, make([]byte, 4)
		a := testing.AllocsPerRun(1000, func() {
			bt.write(hs[0], 8, src)
			bt.read(dst, hs[0], 8)
		})
		if a != 0 {
			t.Fatalf("%v allocations", a)
		}
	})
}

func TestConcatRows(t *testing.T) {
	bt := &buffers{}
	add := func(id uintptr, base uint64, size int) device.Buffer {
		return device.NewBuffer(bt.add(bufEntry{bufRef: bufRef{id: id, base: base}, size: size}), size)
	}
	q, k, v := add(1, 0, 64), add(2, 4096, 32), add(3, 32, 34) // v: Q8_0-like, 34 bytes
	tail := add(4, 0, 8)
	t.Run("the sources lie one after the other; a blit takes what is 4-aligned", func(t *testing.T) {
		ps, err := bt.concatRows([]device.Buffer{q, k, v, tail}, 64+32+34+8)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			id   uintptr
			off  int
			blit bool
		}{{1, 0, true}, {2, 64, true}, {3, 96, false}, {4, 130, false}}
		if len(ps) != len(want) {
			t.Fatalf("%d pieces", len(ps))
		}
		for i, w := range want {
			if ps[i].src.id != w.id || ps[i].dstOff != w.off || ps[i].blit != w.blit {
				t.Errorf("piece %d: buffer %d at %d blit %v, want %d at %d blit %v", i, ps[i].src.id, ps[i].dstOff, ps[i].blit, w.id, w.off, w.blit)
			}
		}
	})
	for _, tc := range []struct {
		name  string
		srcs  []device.Buffer
		size  int
		match string
	}{
		{"sources short of the size", []device.Buffer{q, k}, 100, "give 96 of 100"},
		{"sources past the size", []device.Buffer{q, k}, 90, "96+ bytes for 90"},
		{"a source this backend did not make", []device.Buffer{q, device.NewBuffer(42, 8)}, 72, "source 1"},
	} {
		t.Run(tc.name+" are refused", func(t *testing.T) {
			if _, err := bt.concatRows(tc.srcs, tc.size); err == nil || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("got %v, want %q", err, tc.match)
			}
		})
	}
}
