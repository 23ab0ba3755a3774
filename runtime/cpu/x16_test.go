package cpu

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/device"
)

// x16Layouts are the layouts the tests run over.
var x16Layouts = x16All

// unrepack is l.repack's inverse: the x16 bytes src (rows of k elements)
// back in plain rows.
func unrepack(l *x16Layout, dst, src []byte, k int) {
	nb := k / l.bk
	rb, bb := nb*l.src, l.block()
	for g := 0; g < len(src); g += x16Rows * rb {
		for b := range nb {
			in := src[g+b*bb : g+b*bb+bb]
			for r := range x16Rows {
				blk := dst[g+r*rb+b*l.src : g+r*rb+b*l.src+l.src]
				for f := range l.halves {
					blk[l.hoff+2*f], blk[l.hoff+2*f+1] = in[32*f+2*r], in[32*f+2*r+1]
				}
				for j := range l.dwords {
					for e := range 4 {
						blk[l.doff+4*j+e] = in[32*l.halves+64*j+4*r+e] ^ l.flip
					}
				}
			}
		}
	}
}

func TestRepackRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	for _, l := range x16Layouts {
		for _, shape := range [][2]int{{16, 1}, {48, 2}, {32, 32}} {
			n, k := shape[0], shape[1]*l.bk
			t.Run(fmt.Sprintf("%s %dx%d gives its source back", l.recipe, n, k), func(t *testing.T) {
				src := make([]byte, n*k/l.bk*l.src)
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				packed, back := make([]byte, len(src)), make([]byte, len(src))
				if err := l.repack(packed, src, k); err != nil {
					t.Fatal(err)
				}
				unrepack(l, back, packed, k)
				if !bytes.Equal(back, src) {
					t.Fatal("repack then its inverse differs from the source")
				}
				// The layout as docs/formats.md states it: group g, block
				// b, row r's f16 field f at 32f + 2r, its dword j after
				// them at 32·halves + 64j + 4r, Q8_0's quants as q + 128
				// (each byte XOR 0x80).
				rb := k / l.bk * l.src
				g, b, row, j := n/16-1, k/l.bk-1, 5, l.dwords-2
				chunk := packed[(g*(k/l.bk)+b)*l.block():]
				blk := src[(16*g+row)*rb+b*l.src:]
				f := l.halves - 1
				want := slices.Clone(blk[l.doff+4*j:][:4])
				if l.dt == dtype.Q8_0 {
					for e := range want {
						want[e] = byte(int(int8(want[e])) + 128)
					}
				}
				if !bytes.Equal(chunk[32*f+2*row:][:2], blk[l.hoff+2*f:][:2]) || !bytes.Equal(chunk[32*l.halves+64*j+4*row:][:4], want) {
					t.Fatal("the layout is not the documented one")
				}
			})
		}
		for _, bad := range []struct {
			name    string
			size, k int
			dstSize int
		}{
			{"refuses 8 rows", 8 * l.src, l.bk, 8 * l.src},
			{"refuses rows that are not whole blocks", 16 * l.src, l.bk - 1, 16 * l.src},
			{"refuses a destination of another size", 16 * l.src, l.bk, 17 * l.src},
			{"refuses a row length of 0", 16 * l.src, 0, 16 * l.src},
		} {
			t.Run(l.recipe+" "+bad.name, func(t *testing.T) {
				err := l.repack(make([]byte, bad.dstSize), make([]byte, bad.size), bad.k)
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("got %v, want an error wrapping ErrUnsupported", err)
				}
			})
		}
	}
}

func TestDeriveRepacksEachSource(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 2))
	for _, l := range x16Layouts {
		t.Run(l.recipe, func(t *testing.T) { testDeriveRepacks(t, r, l) })
	}
	b := New(Options{Threads: 1})
	defer b.Close()
	if _, err := b.Derive("repack:q5_0x16", []device.Buffer{mustMap(t, b, make([]byte, 16*22))}, 16*22, 32); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Derive of an unknown layout: got %v, want an error wrapping ErrUnsupported", err)
	}
}

func testDeriveRepacks(t *testing.T, r *rand.Rand, l *x16Layout) {
	b := New(Options{Threads: 1})
	defer b.Close()
	k := 2 * l.bk
	rb := k / l.bk * l.src
	parts := [][]byte{make([]byte, 32*rb), make([]byte, 16*rb)}
	var srcs []device.Buffer
	var all []byte
	for _, p := range parts {
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		d, err := b.Map(p)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, d)
		all = append(all, p...)
	}
	recipe := kernels.RepackRecipe(l.dt)
	d, err := b.Derive(recipe, srcs, len(all), k)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(all))
	if err := b.Read(got, d, 0); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, len(all))
	if err := l.repack(want, all, k); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("Derive's bytes differ from the repacked concatenation")
	}
	for _, c := range []struct {
		name       string
		srcs       []device.Buffer
		size, rowK int
	}{
		{"without a row length", srcs, len(all), 0},
		{"with a row length that splits the groups", srcs, len(all), 3 * k},
		{"with a source of 8 rows", []device.Buffer{mustMap(t, b, make([]byte, 8*rb))}, 8 * rb, k},
	} {
		if _, err := b.Derive(recipe, c.srcs, c.size, c.rowK); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Derive %s: got %v, want an error wrapping ErrUnsupported", c.name, err)
		}
	}
}

func mustMap(t *testing.T, b *Backend, data []byte) device.Buffer {
	t.Helper()
	d, err := b.Map(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// x16Case is an x16 kernel's inputs: n×k weights of l's type repacked, m
// rows of activations quantized to Q8_0 and packed into records.
type x16Case struct {
	l       *x16Layout
	n, k, m int
	plain   []byte // the weights, GGUF rows
	w       []byte // repacked
	q       q8act
	recs    []byte
}

func newX16Case(t testing.TB, r *rand.Rand, l *x16Layout, n, k, m int) *x16Case {
	c := &x16Case{l: l, n: n, k: k, m: m}
	c.plain, _ = weights(t, r, l.dt, n, k)
	c.w = make([]byte, len(c.plain))
	if err := l.repack(c.w, c.plain, k); err != nil {
		t.Fatal(err)
	}
	x := randFloats(r, m*k, 1)
	c.q.need(m * k)
	c.q.quantize(l.aq, x, m, k)
	c.recs = make([]byte, l.recs(m, k))
	for i := range m {
		l.pack(c.recs, &c.q, i, m, k)
	}
	return c
}

// run computes Y (m×n) with kernel f, passes of maxM rows as the GEMM
// does.
func (c *x16Case) run(f x16Kernel) []float32 {
	l := c.l
	nb := c.k / l.bk
	y := make([]float32, c.m*c.n)
	for i := 0; i < c.m; i += l.maxM {
		mc := min(l.maxM, c.m-i)
		f(c.w, nb, c.n/x16Rows, c.recs[i*nb*l.rec:], mc, y[i*c.n:], c.n)
	}
	return y
}

// goTwin is l's portable kernel.
func goTwin(l *x16Layout) x16Kernel {
	switch l {
	case x16Q8_0:
		return q8x16Go
	case x16Q4_K:
		return q4kx16Go
	case x16Q6_K:
		return q6kx16Go
	}
	return q4x16Go
}

// Both prefetch forms of each assembly kernel (early or not: Intel's and
// the others') against the Go, bit for bit.
func TestX16TwinsMatchGoBitForBit(t *testing.T) {
	for _, l := range x16Layouts {
		t.Run(l.recipe, func(t *testing.T) {
			needCPU(t, l.native, "x16 kernels (AVX-512 VNNI, amd64 assembly)")
			defer func(e int) { x16Early = e }(x16Early)
			for _, early := range []int{0, 1} {
				x16Early = early
				testX16Twin(t, l)
			}
		})
	}
}

func testX16Twin(t *testing.T, l *x16Layout) {
	r := rand.New(rand.NewPCG(16, 3))
	for _, n := range []int{16, 48, 256} {
		for _, k := range []int{32, 64, 256, 1024, 3072} {
			if k%l.bk != 0 {
				continue
			}
			for _, m := range []int{1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 33} {
				c := newX16Case(t, r, l, n, k, m)
				if m == 3 {
					// Records and weights of any bytes: quants of −128,
					// extreme sums and scales, which the quantizer never
					// writes.
					for i := range c.recs {
						if o := i % l.rec; o < l.bk || o >= l.bk+4 {
							c.recs[i] = byte(r.Uint32())
						}
					}
					for i := range c.w {
						if i%l.block() >= 32*l.halves {
							c.w[i] = byte(r.Uint32())
						}
					}
				}
				got, want := c.run(l.kernel), c.run(goTwin(l))
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("early %d n=%d k=%d m=%d: Y[%d][%d]: assembly %g, Go %g", x16Early, n, k, m, i/n, i%n, got[i], want[i])
					}
				}
			}
		}
	}
}

// x16Tol is the tolerance of an x16 output against the plain kernels' for
// the same quantized activation: both sum the same exact integer block
// sums times the same float32 scales f16(d_w)·d_a, only in another order
// (the plain forms split each block into 8 or 16 lanes of partial sums,
// add them across blocks, then reduce the lanes). Each is within
// γ_(nb+16) = (nb+16)·2^-24 of the exact sum relative to
// S = Σ_b |d_w·d_a|·Σ_i |q_w·q_a| (the terms' products rounded once, nb
// additions per lane, up to 16 more in the lane reduction), so they
// differ by at most twice that; a bias adds one rounding to each.
func x16Tol(c *x16Case, i, row int, y float64) float64 {
	nb, rb, bs := c.k/c.l.bk, c.k/c.l.bk*c.l.src, c.l.src
	qs, d, sums := c.q.row(c.l.aq, i, c.k)
	w := c.plain[row*rb : row*rb+rb]
	var s float64
	if c.l.dt == dtype.Q6_K { // d·sc·(q − 32) for each element
		for b := range nb {
			blk := w[b*bs : b*bs+bs]
			var is float64
			for e := range qkK {
				half, rest := e/128, e%128
				part, l := rest/32, rest%32
				ql := blk[64*half+32*(part%2)+l] >> (4 * (part / 2)) & 15
				qh := blk[128+32*half+l] >> (2 * part) & 3
				sc := int8(blk[192+8*half+2*part+l/16])
				is += math.Abs(float64(int(sc) * (int(ql|qh<<4) - 32) * int(qs[b*qkK+e])))
			}
			s += math.Abs(float64(f16le(blk, 208)*d[b])) * is
		}
		return 2*float64(nb+16)*0x1p-24*s + 0x1p-23*math.Abs(y) + 1e-30
	}
	if c.l.dt == dtype.Q4_K { // the d·sc·q and dmin·m terms, each of its lanes' products
		for b := range nb {
			blk := w[b*bs : b*bs+bs]
			var is, ms float64
			for j := range 8 {
				sc, m := dtype.ScaleMinK4(j, blk[4:16])
				for l := range 32 {
					q := blk[16+j/2*32+l] >> (4 * (j % 2)) & 15
					is += float64(sc) * math.Abs(float64(int(q)*int(qs[b*qkK+32*j+l])))
				}
				ms += float64(m) * math.Abs(float64(sums[16*b+2*j]+sums[16*b+2*j+1]))
			}
			s += math.Abs(float64(f16le(blk, 0)*d[b]))*is + math.Abs(float64(f16le(blk, 2)*d[b]))*ms
		}
		return 2*float64(nb+16)*0x1p-24*s + 0x1p-23*math.Abs(y) + 1e-30
	}
	for b := range nb {
		var is float64
		for j := range 32 {
			var q int
			if c.l.dt == dtype.Q8_0 {
				q = int(int8(w[b*bs+2+j]))
			} else if j < 16 {
				q = int(w[b*bs+2+j]&15) - 8
			} else {
				q = int(w[b*bs+2+j-16]>>4) - 8
			}
			is += math.Abs(float64(q * int(qs[b*qk+j])))
		}
		s += math.Abs(float64(f16le(w, b*bs)*d[b])) * is
	}
	return 2*float64(nb+16)*0x1p-24*s + 0x1p-23*math.Abs(y) + 1e-30
}

func TestX16KernelsMatchPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 4))
	h := newHarness(t, 2)
	const n, k = 64, 1024
	for _, l := range x16Layouts {
		dt := strings.ToLower(l.dt.String())
		for _, tc := range []struct {
			name, plain string
			m           int
		}{
			{"gemv_%s_x16_f32", "gemv_%s_f32", 1},
			{"gemv_%s_x16_silu_f32", "gemv_%s_silu_f32", 1},
			{"simd_gemm_small_%s_x16_f32", "simd_gemm_small_%s_f32", 8},
			{"simd_gemm_%s_x16_f32", "simd_gemm_%s_f32", 1},
			{"simd_gemm_%s_x16_f32", "simd_gemm_%s_f32", 17},
			{"simd_gemm_%s_x16_f32", "simd_gemm_%s_f32", 40},
		} {
			name, plain := fmt.Sprintf(tc.name, dt), fmt.Sprintf(tc.plain, dt)
			for _, bias := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s m=%d bias=%v equals %s to float32 summation order", name, tc.m, bias, plain), func(t *testing.T) {
					c := newX16Case(t, r, l, n, k, tc.m)
					silu := strings.Contains(name, "_silu")
					var bs binds
					x := randFloats(r, tc.m*k, 1)
					if silu {
						up := randFloats(r, k, 1)
						bs = binds{"gate": f32bytes(x), "up": f32bytes(up)}
						siluMul(x, up) // what both kernels quantize
					} else {
						bs = binds{"x": f32bytes(x)}
					}
					c.q.quantize(l.aq, x, tc.m, k) // for the tolerance
					bv := randFloats(r, n, 1)
					if bias {
						bs["bias"] = f32bytes(bv)
					}
					var p any = kernels.GEMVParams{N: n, K: k}
					if tc.m > 1 || name[0] == 's' {
						p = kernels.GEMMParams{M: uint32(tc.m), N: n, K: k, LDA: k, LDC: n}
					}
					run := func(name string, w []byte) []float32 {
						y := Alloc(4 * tc.m * n)
						b := binds{"w": w, "y": y}
						for key, v := range bs {
							b[key] = v
						}
						h.run(name, p, consts{"has_bias": b2u(bias)}, b)
						return f32s(y)
					}
					got, want := run(name, c.w), run(plain, c.plain)
					for i := range tc.m {
						for row := range n {
							g, w := float64(got[i*n+row]), float64(want[i*n+row])
							if tol := x16Tol(c, i, row, w); math.Abs(g-w) > tol {
								t.Fatalf("Y[%d][%d]: x16 %g, plain %g (tolerance %g)", i, row, g, w, tol)
							}
						}
					}
					// The command, with the Go twin in the assembly's
					// place, gives the same bits.
					if l.native {
						native := l.kernel
						l.kernel = goTwin(l)
						goY := run(name, c.w)
						l.kernel = native
						for i := range goY {
							if math.Float32bits(goY[i]) != math.Float32bits(got[i]) {
								t.Fatalf("element %d: assembly %g, Go twin %g", i, got[i], goY[i])
							}
						}
					}
				})
			}
		}
	}
}

func TestBoundX16GEMMDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 5))
	h := newHarness(t, 2)
	const m, n, k = 8, 256, 1024
	for _, l := range x16Layouts {
		c := newX16Case(t, r, l, n, k, 1)
		x, y := f32bytes(randFloats(r, m*k, 1)), Alloc(4*m*n)
		dt := strings.ToLower(l.dt.String())
		for _, name := range []string{"simd_gemm_" + dt + "_x16_f32", "gemv_" + dt + "_x16_f32"} {
			var e *Exec
			if name[0] == 's' {
				e = h.bind(name, kernels.GEMMParams{M: m, N: n, K: k, LDA: k, LDC: n}, consts{"has_bias": 1},
					binds{"w": c.w, "x": x, "y": y, "bias": f32bytes(randFloats(r, n, 1))})
			} else {
				e = h.bind(name, kernels.GEMVParams{N: n, K: k}, nil, binds{"w": c.w, "x": x, "y": y})
			}
			if a := testing.AllocsPerRun(20, e.Run); a != 0 {
				t.Errorf("%s: %v allocations per run, want 0", name, a)
			}
		}
	}
}

func TestSum32(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	b := make([]byte, 32)
	for trial := range 2000 {
		for i := range b {
			switch trial {
			case 0:
				b[i] = 0x80 // all −128
			case 1:
				b[i] = 0x7f // all 127
			default:
				b[i] = byte(r.Uint32())
			}
		}
		var want int32
		for _, v := range b {
			want += int32(int8(v))
		}
		if got := sum32(b); got != want {
			t.Fatalf("sum32(%v) = %d, want %d", b, got, want)
		}
	}
}

// packRecs (an AVX2 twin where the CPU has it) writes the records
// packRecsGo does, byte for byte, over every quant byte (−128 too, which
// Q8_0 never makes) and the extremes of the sum, at a record step that
// leaves gaps it must not write.
func TestPackRecsMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	for _, nb := range []int{1, 2, 3, 32, 96} {
		qs, d := make([]int8, nb*qk), make([]float32, nb)
		for i := range qs {
			switch {
			case i < qk:
				qs[i] = -128
			case i < 2*qk:
				qs[i] = 127
			default:
				qs[i] = int8(r.Uint32())
			}
		}
		for b := range d {
			d[b] = float32(r.NormFloat64())
		}
		step := 3 * x16Rec
		for _, bias := range []int32{-8, -128} {
			got, want := make([]byte, nb*step), make([]byte, nb*step)
			for i := range got {
				got[i], want[i] = 0xa5, 0xa5
			}
			packRecs(got, step, qs, d, bias)
			packRecsGo(want, step, qs, d, bias)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("nb %d bias %d: byte %d (record %d, offset %d) = %#x, portable %#x", nb, bias, i, i/step, i%step, got[i], want[i])
				}
			}
		}
	}
}

// GEMMs that run one after another on the same rows of X (q, k and v; gate
// and up) share the first one's prepared X; each gives what it gives run
// alone, also when the reuse must not happen: another command ran in
// between, the host wrote, the first one's output overwrote X, or M
// differs.
func TestGEMMsShareAPreparedInput(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 6))
	const n, k, lda = 32, 256, 264
	const name = "simd_gemm_small_q4_0_x16_f32"
	w1, w2 := newX16Case(t, r, x16Q4_0, n, k, 1).w, newX16Case(t, r, x16Q4_0, n, k, 1).w
	alone := func(w, x []byte, m int) []float32 {
		h := newHarness(t, 2)
		y := Alloc(4 * m * n)
		h.bind(name, kernels.GEMMParams{M: uint32(m), N: n, K: k, LDA: lda, LDC: n}, nil, binds{"w": w, "x": x, "y": y}).Run()
		return append([]float32(nil), f32s(y)...)
	}
	for _, c := range []struct {
		name  string
		reuse bool
		m2    int
		// between runs something between the two GEMMs: "" nothing,
		// "cmd" another command, "write" a host write of X, "alias" the
		// first GEMM writes into X.
		between string
	}{
		{"the second reuses the first's X", true, 5, ""},
		{"another command in between", false, 5, "cmd"},
		{"a host write in between", false, 5, "write"},
		{"the first overwrites X", false, 5, "alias"},
		{"another M", false, 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 2)
			const m = 5
			x := f32bytes(randFloats(r, m*lda, 1))
			y1, y2 := Alloc(4*m*n), Alloc(4*m*n)
			if c.between == "alias" { // Y1 is X's second row on
				y1 = x[4*lda:]
			}
			a := h.bind(name, kernels.GEMMParams{M: m, N: n, K: k, LDA: lda, LDC: n}, nil, binds{"w": w1, "x": x, "y": y1})
			b := h.bind(name, kernels.GEMMParams{M: uint32(c.m2), N: n, K: k, LDA: lda, LDC: n}, nil, binds{"w": w2, "x": x, "y": y2})
			other := h.bind("rmsnorm_f32", kernels.NormParams{Dim: 8, NRows: 1, NHeads: 1, Stride: 8, Eps: 1e-6}, nil,
				binds{"x": Alloc(32), "weight": f32bytes(randFloats(r, 8, 1)), "out": Alloc(32)})
			linkGEMMs([]*Exec{a, b})
			a.Run()
			switch c.between {
			case "cmd":
				other.Run()
			case "write":
				copy(x, f32bytes(randFloats(r, k, 1))) // a new first row
				xb := h.dev[len(h.dev)-1]
				for i, d := range h.bufs {
					if &d[0] == &x[0] {
						xb = h.dev[i]
						break
					}
				}
				if err := h.b.Write(xb, 0, x[:4*k]); err != nil {
					t.Fatal(err)
				}
			}
			gb := b.impl.(*gemm)
			gb.e = b
			if got := gb.prepared(); got != c.reuse {
				t.Fatalf("prepared = %v, want %v", got, c.reuse)
			}
			want := alone(w2, append([]byte(nil), x...), c.m2)
			b.Run()
			if got := f32s(y2)[:c.m2*n]; !slices.Equal(got, want[:c.m2*n]) {
				t.Fatalf("second GEMM after the first differs from it alone")
			}
		})
	}
}

// The q4_kx16 and q6_kx16 kernels (assembly where the CPU has it) give
// the plain dots' bits (dotQ4_KGo, dotQ6_KGo) for every output: the same
// integer sums and float steps.
func TestKx16IsThePlainDot(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 7))
	for _, c := range []struct {
		l   *x16Layout
		dot func(w []byte, qs []int8, d, bs []float32) float32
	}{{x16Q4_K, dotQ4_KGo}, {x16Q6_K, dotQ6_KGo}} {
		for _, shape := range [][3]int{{16, 256, 1}, {32, 1024, 5}, {48, 2048, 8}, {16, 512, 19}} {
			n, k, m := shape[0], shape[1], shape[2]
			xc := newX16Case(t, r, c.l, n, k, m)
			got := xc.run(c.l.kernel)
			rb := k / qkK * c.l.src
			for i := range m {
				qs, d, bs := xc.q.row(aqQ8_K, i, k)
				for row := range n {
					want := c.dot(xc.plain[row*rb:row*rb+rb], qs, d, bs)
					if g := got[i*n+row]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s n=%d k=%d m=%d: Y[%d][%d] = %g, the plain dot %g", c.l.recipe, n, k, m, i, row, g, want)
					}
				}
			}
		}
	}
}

// Every _x16 kernel of the catalog has its layout here (kernels' repacked
// types and x16All agree), and a kernel without one is refused at prepare.
func TestEveryX16KernelHasItsLayout(t *testing.T) {
	n := 0
	for _, k := range kernels.All() {
		if k.Variant&kernels.X16 == 0 {
			continue
		}
		n++
		if x16For(k) == nil {
			t.Errorf("%s: no x16 layout for %v", k.Name, k.DType)
		}
	}
	if n == 0 {
		t.Fatal("the catalog has no _x16 kernels")
	}
	bad := &kernels.Kernel{Name: "gemv_q5_0_x16_f32", Spec: kernels.Spec{Op: kernels.OpGEMV, DType: dtype.Q5_0, Variant: kernels.X16, Act: dtype.F32}}
	if err := checkX16(bad, x16For(bad), actF32, 16); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an x16 kernel of a type without a layout: got %v, want ErrUnsupported", err)
	}
}

// repack:q4_0_planar stacks its sources (a fused Q|K|V weight's) and then
// splits the blocks into planes: one matrix, not each source on its own.
func TestDerivePlanarStacksItsSources(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 3))
	b := New(Options{Threads: 1})
	defer b.Close()
	parts := [][]byte{make([]byte, 3*18*4), make([]byte, 5*18*4)}
	var srcs []device.Buffer
	var all []byte
	for _, p := range parts {
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		srcs = append(srcs, mustMap(t, b, p))
		all = append(all, p...)
	}
	d, err := b.Derive(kernels.PlanarRecipe(dtype.Q4_0), srcs, len(all), 128)
	if err != nil {
		t.Fatal(err)
	}
	got, want := make([]byte, len(all)), make([]byte, len(all))
	if err := b.Read(got, d, 0); err != nil {
		t.Fatal(err)
	}
	if err := kernels.ToPlanar(dtype.Q4_0, want, all); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("Derive's bytes differ from the planar layout of the stacked sources")
	}
	if _, err := b.Derive(kernels.PlanarRecipe(dtype.Q4_0), srcs, len(all)+18, 128); err == nil {
		t.Error("sources of fewer bytes than the buffer were taken")
	}
}
