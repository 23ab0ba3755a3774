package kernels_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// A matrix taken to the planar layout and read back a row at a time gives
// the file's bytes again, and the two planes are where the layout says.
func TestThePlanarLayoutKeepsEveryByte(t *testing.T) {
	const rows, k = 5, 96
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, rows*k/32*18)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	p := make([]byte, len(src))
	if err := kernels.ToPlanar(dtype.Q4_0, p, src); err != nil {
		t.Fatal(err)
	}
	nb := rows * k / 32
	if !bytes.Equal(p[16:32], src[20:36]) || !bytes.Equal(p[16*nb+2:16*nb+4], src[18:20]) {
		t.Fatal("block 1's quants or scale are not where the layout puts them")
	}
	row := make([]byte, k/32*18)
	for i := range rows {
		if err := kernels.PlanarRow(dtype.Q4_0, row, append(p, 1, 2, 3), rows, i, k); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(row, src[i*len(row):(i+1)*len(row)]) {
			t.Fatalf("row %d differs after the round trip", i)
		}
	}
	if err := kernels.ToPlanar(dtype.Q8_0, p, src); err == nil {
		t.Error("Q8_0 has no planar layout, yet ToPlanar took it")
	}
	if err := kernels.ToPlanar(dtype.Q4_0, p[:17], src[:17]); err == nil {
		t.Error("17 bytes are not whole blocks, yet ToPlanar took them")
	}
	if err := kernels.PlanarRow(dtype.Q4_0, row, p, rows, rows, k); err == nil {
		t.Error("a row past the last was read")
	}
}

func TestPlanarQuantBytesIsWhereTheScalesStart(t *testing.T) {
	if n, err := kernels.PlanarQuantBytes(dtype.Q4_0, 5*18); err != nil || n != 5*16 {
		t.Errorf("5 Q4_0 blocks: %d, %v; want 80", n, err)
	}
	if _, err := kernels.PlanarQuantBytes(dtype.Q4_0, 19); err == nil {
		t.Error("19 bytes are not whole blocks, yet PlanarQuantBytes took them")
	}
	if _, err := kernels.PlanarQuantBytes(dtype.Q8_0, 34); err == nil {
		t.Error("Q8_0 has no planar layout, yet PlanarQuantBytes took it")
	}
}

func TestInterleaveRowsTakesTheRowsInTurn(t *testing.T) {
	a, b := []byte{1, 2, 3, 4}, []byte{5, 6, 7, 8}
	dst := make([]byte, 8)
	if err := kernels.InterleaveRows(dst, a, b, 2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, []byte{1, 2, 5, 6, 3, 4, 7, 8}) {
		t.Errorf("got %v", dst)
	}
	if err := kernels.InterleaveRows(dst, a, b[:2], 2); err == nil {
		t.Error("sources of two sizes were interleaved")
	}
}

// Q6_K's planar block is its first 208 bytes (ql, qh, scales) with d, its
// last two, in the scale plane; rows read back give the file's bytes.
func TestTheQ6_KPlanarLayoutKeepsEveryByte(t *testing.T) {
	const rows, k = 3, 512
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]byte, rows*k/256*210)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	p := make([]byte, len(src))
	if err := kernels.ToPlanar(dtype.Q6_K, p, src); err != nil {
		t.Fatal(err)
	}
	nb := rows * k / 256
	if !bytes.Equal(p[208:416], src[210:418]) || !bytes.Equal(p[208*nb+2:208*nb+4], src[418:420]) {
		t.Fatal("block 1's quants or d are not where the layout puts them")
	}
	if n, err := kernels.PlanarQuantBytes(dtype.Q6_K, len(src)); err != nil || n != 208*nb {
		t.Errorf("PlanarQuantBytes: %d, %v; want %d", n, err, 208*nb)
	}
	row := make([]byte, k/256*210)
	for i := range rows {
		if err := kernels.PlanarRow(dtype.Q6_K, row, p, rows, i, k); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(row, src[i*len(row):(i+1)*len(row)]) {
			t.Fatalf("row %d differs after the round trip", i)
		}
	}
}
