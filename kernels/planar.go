package kernels

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Planar layouts (docs/formats.md#planar): a matrix of a planar type's
// blocks, its rows one after the other, stored as two planes: every
// block's quants in the blocks' order, then every block's F16 scale in
// the same order. Q4_0's 18-byte block becomes 16 bytes in the first plane
// (16-byte aligned, one load on a GPU) and 2 in the second; Q6_K's
// 210-byte block 208 (its ql, qh and sub-block scales) and 2 (its d). The
// size is unchanged. Rows stacked from several tensors (a fused Q|K|V
// weight) are one matrix: blocks in order.

// planarBlock is the block size, scale bytes and the scale's offset in
// the block of a planar type (Q4_0: 18 bytes, a 2-byte F16 scale first
// and 16 bytes of nibbles; Q6_K: 210, its F16 d last, at 208).
func planarBlock(dt dtype.Type) (block, scale, at int, err error) {
	switch {
	case PlanarRecipe(dt) == "":
		return 0, 0, 0, fmt.Errorf("kernels: %v has no planar layout", dt)
	case dt == dtype.Q6_K:
		return 210, 2, 208, nil
	}
	return 18, 2, 0, nil
}

// splitBlock copies block b's scale into sc and its other bytes, in
// order, into q; joinBlock is the reverse.
func splitBlock(b, q, sc []byte, at int) {
	copy(sc, b[at:at+len(sc)])
	copy(q, b[:at])
	copy(q[at:], b[at+len(sc):])
}

func joinBlock(b, q, sc []byte, at int) {
	copy(b[at:at+len(sc)], sc)
	copy(b[:at], q)
	copy(b[at+len(sc):], q[at:])
}

// PlanarQuantBytes is the size of the quant plane of size bytes of dt's
// blocks (the scale plane follows it).
func PlanarQuantBytes(dt dtype.Type, size int) (int, error) {
	bs, ss, _, err := planarBlock(dt)
	if err != nil {
		return 0, err
	}
	if size%bs != 0 {
		return 0, fmt.Errorf("kernels: planar %v: %d bytes are not whole %d-byte blocks", dt, size, bs)
	}
	return size / bs * (bs - ss), nil
}

// ToPlanar writes src, whole blocks of dt in the file's layout, into dst
// (the same size) in the planar layout.
func ToPlanar(dt dtype.Type, dst, src []byte) error {
	bs, ss, at, err := planarBlock(dt)
	if err != nil {
		return err
	}
	if len(src)%bs != 0 || len(dst) != len(src) {
		return fmt.Errorf("kernels: planar %v: %d bytes into %d: not whole %d-byte blocks of one size", dt, len(src), len(dst), bs)
	}
	n, qs := len(src)/bs, bs-ss
	quants, scales := dst[:n*qs], dst[n*qs:]
	for i := range n {
		splitBlock(src[i*bs:i*bs+bs], quants[i*qs:i*qs+qs], scales[i*ss:i*ss+ss], at)
	}
	return nil
}

// PlanarRow writes row r of a planar matrix of n rows of k elements (its
// bytes at the start of p) into dst in the file's layout, a row's bytes.
func PlanarRow(dt dtype.Type, dst, p []byte, n, r, k int) error {
	bs, ss, at, err := planarBlock(dt)
	if err != nil {
		return err
	}
	nb, qs := k/int(dt.BlockSize()), bs-ss
	if nb*int(dt.BlockSize()) != k || len(dst) != nb*bs || r < 0 || r >= n || len(p) < n*nb*bs {
		return fmt.Errorf("kernels: planar %v: row %d of %d rows of %d elements from %d bytes into %d", dt, r, n, k, len(p), len(dst))
	}
	quants, scales := p[:n*nb*qs], p[n*nb*qs:n*nb*bs]
	for j := range nb {
		i := r*nb + j
		joinBlock(dst[j*bs:j*bs+bs], quants[i*qs:i*qs+qs], scales[i*ss:i*ss+ss], at)
	}
	return nil
}

// InterleaveRows writes the rows of a and b (rows of rb bytes, as many in
// each) into dst in turn: a's row 0, b's row 0, a's row 1, ... The
// repack:<dtype>_planar_pairs recipe interleaves a gate and an up weight
// so, then takes them to the planar layout.
func InterleaveRows(dst, a, b []byte, rb int) error {
	if rb <= 0 || len(a)%rb != 0 || len(b) != len(a) || len(dst) != 2*len(a) {
		return fmt.Errorf("kernels: interleaving %d and %d bytes of %d-byte rows into %d", len(a), len(b), rb, len(dst))
	}
	for i := range len(a) / rb {
		copy(dst[2*i*rb:], a[i*rb:(i+1)*rb])
		copy(dst[(2*i+1)*rb:], b[i*rb:(i+1)*rb])
	}
	return nil
}
