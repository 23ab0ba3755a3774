package cuda_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/kernels/gpu"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cpu"
	"github.com/akunu-dev/akunu/runtime/cuda"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/specs/chips"
)

// backend is what the cross-check needs of a backend (runtime.Backend's
// subset; runtime imports this package, so it cannot be named here).
type backend interface {
	Alloc(int) (device.Buffer, error)
	Map([]byte) (device.Buffer, error)
	Free(device.Buffer)
	Write(device.Buffer, int, []byte) error
	Read([]byte, device.Buffer, int) error
	Bind([]device.Command) (device.Program, error)
	Unbind(device.Program)
	Encode(device.Program, []plans.Step)
	Commit()
	Wait() error
}

var (
	gpuOnce sync.Once
	gpuBE   *cuda.Backend
	gpuErr  error
)

func cudaBackend(t testing.TB) *cuda.Backend {
	t.Helper()
	gpuOnce.Do(func() { gpuBE, gpuErr = cuda.New(cuda.Options{}) })
	if errors.Is(gpuErr, cuda.ErrUnavailable) {
		proof.Elsewhere(t, "the CUDA kernels are not held to their CPU twins (go test ./runtime/cuda on a machine with an NVIDIA GPU)", gpuErr.Error())
	}
	if gpuErr != nil {
		t.Fatal(gpuErr)
	}
	return gpuBE
}

// kcase is one command of one kernel: its shape (the geometry rule gives
// the launch and the constants from it, as the compiler does), its
// parameter struct and its buffers by binding name.
type kcase struct {
	shape  kernels.Shape
	params any
	bufs   map[string][]byte
}

// run binds the case's command on be as the runtime would (device.Resolve
// first), runs it once and returns the bytes of every buffer it writes.
func run(t *testing.T, be backend, k *kernels.Kernel, c kcase) map[string][]byte {
	t.Helper()
	b := bindCase(t, be, k, c)
	defer b.free()
	be.Encode(b.prog, []plans.Step{{}})
	be.Commit()
	if err := be.Wait(); err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	out := map[string][]byte{}
	for i, h := range b.bufs {
		name := b.names[i]
		for _, kb := range k.Bindings {
			if kb.Name == name && kb.Access != kernels.Read {
				o := make([]byte, len(c.bufs[name]))
				if err := be.Read(o, h, 0); err != nil {
					t.Fatal(err)
				}
				out[name] = o
			}
		}
	}
	return out
}

// boundCase is a case's command bound on a backend: its program, its
// buffers (names by index) and what frees them.
type boundCase struct {
	prog  device.Program
	bufs  []device.Buffer
	names map[int]string
	free  func()
}

// bindCase binds the case's command on be as the runtime would
// (device.Resolve first), its buffers holding the case's bytes.
func bindCase(t testing.TB, be backend, k *kernels.Kernel, c kcase) boundCase {
	t.Helper()
	tun, err := chips.Resolve("h100-sxm", 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := k.Geometry(c.shape, tun.Tuning())
	if err != nil {
		t.Fatalf("%s: geometry: %v", k.Name, err)
	}
	p := plans.Pipeline{Kernel: k.Name}
	for _, cv := range l.Constants {
		typ := plans.ConstU32
		if cv.Type == kernels.ConstBool {
			typ = plans.ConstBool
		}
		p.Constants = append(p.Constants, plans.Constant{Index: uint32(cv.Index), Type: typ, Value: cv.Value})
	}
	cmd := plans.Command{Label: "test." + k.Name, Params: kernels.Encode(c.params), ParamsSlot: uint32(k.ParamSlot), ThreadgroupMemory: uint32(l.TGMem)}
	for d := range 3 {
		cmd.Grid[d], cmd.Threadgroup[d] = uint32(l.Grid[d]), uint32(l.Threadgroup[d])
	}
	pl := &plans.Plan{Pipelines: []plans.Pipeline{p}}
	pl.Header.Target.Tuning = compiler.PlanTuning(tun.Tuning())
	var bufs []device.Buffer
	freeBufs := func() {
		for _, b := range bufs {
			be.Free(b)
		}
	}
	ok := false
	defer func() {
		if !ok {
			freeBufs()
		}
	}()
	names := map[int]string{}
	for _, b := range k.Bindings {
		data, ok := c.bufs[b.Name]
		if !ok {
			continue
		}
		kind := plans.BufScratch
		var h device.Buffer
		switch b.Role {
		case kernels.RoleWeight:
			kind = plans.BufWeight
			h, err = be.Map(data)
		default:
			if b.Role == kernels.RoleKV {
				kind = plans.BufKV
			}
			if h, err = be.Alloc(len(data)); err == nil {
				err = be.Write(h, 0, data)
			}
		}
		if err != nil {
			t.Fatalf("%s: buffer %s: %v", k.Name, b.Name, err)
		}
		names[len(bufs)] = b.Name
		cmd.Bindings = append(cmd.Bindings, plans.Binding{Slot: uint32(b.Slot), Buffer: uint32(len(bufs))})
		pl.Buffers = append(pl.Buffers, plans.Buffer{Name: b.Name, Kind: kind, Size: uint64(len(data))})
		bufs = append(bufs, h)
	}
	pr := &plans.Program{Name: "test", Batch: 1, Commands: []plans.Command{cmd}}
	rc, err := device.Resolve(pl, pr, 0, bufs, plans.StepBounds{Slots: 8, Ctx: tCtx, Seqs: 2, Batch: 1 << 16, Out: 1 << 16})
	if err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	prog, err := be.Bind([]device.Command{rc})
	if err != nil {
		t.Fatalf("%s: bind: %v", k.Name, err)
	}
	ok = true
	return boundCase{prog, bufs, names, func() { be.Unbind(prog); freeBufs() }}
}

// Sizes of the cases: small, but past one threadgroup and one block of
// every weight type, with ragged rows where a kernel allows them.
const (
	tD, tRows, tN, tK = 256, 3, 96, 512
	tH, tKVH, tHD     = 4, 2, 64
	tCtx, tVocab      = 64, 1000
)

// wideArgmax is argmax over a Llama 3 vocabulary (128256 logits: 16-byte
// loads and a tail that is not a whole load of every thread) with each
// row's largest logit twice, the lower index the answer (row 0: 8195
// and 16387; row 1: 801 and 98309).
func wideArgmax(r *rand.Rand) kcase {
	const n = 128256
	logits := f16s(r, 2*n, 3)
	for row, ix := range [][2]int{{8*1024 + 3, 8*2*1024 + 3}, {8*3*1024*4 + 5, 8*100 + 1}} {
		for _, i := range ix {
			binary.LittleEndian.PutUint16(logits[2*(row*n+i):], dtype.Float16bits(100))
		}
	}
	return kcase{kernels.Shape{Tokens: 2, Vocab: n, VecX: true}, kernels.ArgmaxParams{N: n, OutSlot: 1, NRows: 2},
		map[string][]byte{"logits": logits, "ids": make([]byte, 4*4)}}
}

func f16s(r *rand.Rand, n int, scale float64) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], dtype.Float16bits(float32(r.NormFloat64()*scale)))
	}
	return b
}

func f32s(r *rand.Rand, n int, scale, offset float64) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(offset+r.NormFloat64()*scale)))
	}
	return b
}

func u32s(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func quantized(t *testing.T, r *rand.Rand, dt dtype.Type, rows, k int) []byte {
	t.Helper()
	src := make([]float32, rows*k)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	rb, err := dt.RowBytes(int64(k))
	if err != nil {
		t.Fatal(err)
	}
	w := make([]byte, rows*int(rb))
	if err := dtype.Quantize(dt, src, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// caseFor builds a case for kernel k, or says why it has none.
// gemmHalfStep is a GEMM case whose K ends half-way through simd_gemm's
// K step of 64, X loaded in 16-byte vectors.
func gemmHalfStep(t *testing.T, r *rand.Rand, k *kernels.Kernel) kcase {
	const m, n, kk = 33, 70, tK + 32
	s := kernels.Shape{Tokens: m, N: n, K: kk, VecX: true}
	b := map[string][]byte{"w": quantized(t, r, k.DType, n, kk), "x": f16s(r, m*kk, 1), "y": make([]byte, 2*m*n)}
	return kcase{s, kernels.GEMMParams{M: m, N: n, K: kk, LDA: kk, LDC: n}, b}
}

// smallGEMMOddK is a small GEMM whose K (520) is a multiple of 8 but not
// of 16, with vec_x: its rows' chunks of 16 are loaded in vectors but the
// last, of 8, element by element.
func smallGEMMOddK(t *testing.T, r *rand.Rand, k *kernels.Kernel) kcase {
	const m, n, kk = 6, 40, 520
	s := kernels.Shape{Tokens: m, N: n, K: kk, Bias: true, VecX: true}
	b := map[string][]byte{"w": quantized(t, r, k.DType, n, kk), "x": f16s(r, m*kk, 1), "y": make([]byte, 2*m*n), "bias": f32s(r, n, 1, 0)}
	return kcase{s, kernels.GEMMParams{M: m, N: n, K: kk, LDA: kk, LDC: n}, b}
}

func caseFor(t *testing.T, r *rand.Rand, k *kernels.Kernel) (kcase, error) {
	v := k.Variant
	switch k.Op {
	case kernels.OpGEMV:
		s := kernels.Shape{Tokens: 1, N: tN, K: tK, Bias: true}
		b := map[string][]byte{"w": quantized(t, r, k.DType, tN, tK), "y": make([]byte, 2*tN), "bias": f32s(r, tN, 1, 0)}
		if v&kernels.SiLU != 0 {
			b["gate"], b["up"] = f16s(r, tK, 1), f16s(r, tK, 1)
		} else {
			b["x"] = f16s(r, tK, 1)
		}
		if v&kernels.Planar != 0 {
			b["w"] = planar(t, k.DType, b["w"])
		}
		return kcase{s, foldInputs(t, r, k, b, s), b}, nil
	case kernels.OpGEMM:
		m := 37
		if v&kernels.Small != 0 {
			m = 5
		}
		s := kernels.Shape{Tokens: m, N: tN, K: tK, Bias: true}
		b := map[string][]byte{"w": quantized(t, r, k.DType, tN, tK), "x": f16s(r, m*tK, 1), "y": make([]byte, 2*m*tN), "bias": f32s(r, tN, 1, 0)}
		if v&kernels.Planar != 0 {
			b["w"] = planar(t, k.DType, b["w"])
		}
		return kcase{s, kernels.GEMMParams{M: uint32(m), N: tN, K: tK, LDA: tK, LDC: tN}, b}, nil
	case kernels.OpEmbedding:
		s := kernels.Shape{Tokens: 4, Dim: tD, Vocab: 50}
		b := map[string][]byte{"table": quantized(t, r, k.DType, 50, tD), "ids": u32s(9, 3, 49, 50, 7), "out": make([]byte, 2*4*tD)}
		return kcase{s, kernels.EmbeddingParams{Dim: tD, Vocab: 50, TokenSlot: 1, NTokens: 4, Scale: 1.5, OutStride: tD}, b}, nil
	case kernels.OpRMSNorm, kernels.OpLayerNorm:
		s := kernels.Shape{Tokens: tRows, Dim: tD, Bias: k.Op == kernels.OpLayerNorm}
		b := map[string][]byte{"x": f16s(r, tRows*tD, 1), "residual": f16s(r, tRows*tD, 1), "weight": f32s(r, tD, 0.3, 1),
			"bias": f32s(r, tD, 1, 0), "out": make([]byte, 2*tRows*tD)}
		return kcase{s, kernels.NormParams{Dim: tD, NRows: tRows, NHeads: 1, Stride: tD, Eps: 1e-5}, b}, nil
	case kernels.OpHeadRMSNorm:
		s := kernels.Shape{Tokens: tRows, Dim: tHD, Heads: tH}
		b := map[string][]byte{"x": f16s(r, tRows*tH*tHD, 1), "weight": f32s(r, tHD, 0.3, 1)}
		return kcase{s, kernels.NormParams{Dim: tHD, NRows: tRows, NHeads: tH, Stride: tH * tHD, Eps: 1e-6}, b}, nil
	case kernels.OpRoPE:
		s := kernels.Shape{Tokens: tRows, Heads: tH, HeadDim: tHD, Factors: true}
		b := map[string][]byte{"x": f16s(r, tRows*tH*tHD, 1), "factors": f32s(r, tHD/2, 0.2, 1), "pos": u32s(5, 17, 2), "seq": u32s(0, 0, 0)}
		return kcase{s, kernels.RoPEParams{Position: 5, NTokens: tRows, NHeads: tH, HeadDim: tHD, RopeDim: tHD, Stride: tH * tHD,
			OrigCtx: 4096, Theta: 10000, FreqScale: 0.5, AttnFactor: 1, ExtFactor: 1, BetaFast: 32, BetaSlow: 1}, b}, nil
	case kernels.OpRoPEQKVWrite, kernels.OpHeadNormRoPEKVWrite:
		cache := 2 * tKVH * tCtx * tHD // two sequence slots
		s := kernels.Shape{Tokens: tRows, Heads: tH, KVHeads: tKVH, HeadDim: tHD, HeadDimV: tHD, MaxCtx: tCtx, Factors: true}
		b := map[string][]byte{"q": f16s(r, tRows*tH*tHD, 1), "k": f16s(r, tRows*tKVH*tHD, 1), "v": f16s(r, tRows*tKVH*tHD, 1),
			"q_norm": f32s(r, tHD, 0.3, 1), "k_norm": f32s(r, tHD, 0.3, 1), "q_out": make([]byte, 2*tRows*tH*tHD),
			"k_cache": f16s(r, cache, 1), "v_cache": f16s(r, cache, 1), "factors": f32s(r, tHD/2, 0.2, 1),
			"pos": u32s(5, 63, 64), "seq": u32s(1, 0, 1)} // position 64 is past max_ctx: that row writes nothing
		return kcase{s, kernels.RoPEQKVWriteParams{Position: 5, NTokens: tRows, NHeads: tH, NKVHeads: tKVH, HeadDim: tHD, HeadDimV: tHD,
			RopeDim: tHD, MaxCtx: tCtx, QStride: tH * tHD, KVStride: tKVH * tHD, OrigCtx: 4096, Theta: 10000, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}, b}, nil
	case kernels.OpAttentionDecodeRoPE: // position 39 of 40 cached, split 1 of 2 holding it
		s := kernels.Shape{Tokens: 1, Heads: tH, KVHeads: tKVH, HeadDim: tHD, HeadDimV: tHD, MaxCtx: tCtx, Softcap: true, Window: true, Factors: true}
		cache := tKVH * tCtx * tHD
		b := map[string][]byte{"q": f16s(r, tH*tHD, 1), "k": f16s(r, tKVH*tHD, 1), "v": f16s(r, tKVH*tHD, 1),
			"q_norm": f32s(r, tHD, 0.3, 1), "k_norm": f32s(r, tHD, 0.3, 1), "k_cache": f16s(r, cache, 1), "v_cache": f16s(r, cache, 1),
			"partials": make([]byte, 4*tH*2*(tHD+2)), "factors": f32s(r, tHD/2, 0.2, 1)}
		return kcase{s, kernels.AttentionRoPEParams{NHeads: tH, NKVHeads: tKVH, HeadDim: tHD, HeadDimV: tHD, KVLen: 40, MaxCtx: tCtx,
			Position: 39, Window: 24, Scale: 0.125, Softcap: 30, RopeDim: tHD, OrigCtx: 4096, Theta: 10000, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}, b}, nil
	case kernels.OpAttentionDecode, kernels.OpAttentionPrefill, kernels.OpAttentionDecodeReduce:
		tokens := 1
		if k.Op == kernels.OpAttentionPrefill {
			tokens = 6
		}
		cache := 2 * tKVH * tCtx * tHD // two sequence slots
		s := kernels.Shape{Tokens: tokens, Heads: tH, KVHeads: tKVH, HeadDim: tHD, HeadDimV: tHD, MaxCtx: tCtx, Softcap: true, Window: true}
		p := kernels.AttentionParams{NHeads: tH, NKVHeads: tKVH, HeadDim: tHD, HeadDimV: tHD, KVLen: 40, MaxCtx: tCtx, Position: 39,
			NTokens: uint32(tokens), Window: 24, QStride: tH * tHD, OStride: tH * tHD, Scale: 0.125, Softcap: 30}
		if tokens > 1 {
			p.Position, p.KVLen = 34, 40
		}
		splits := 2 // attnSplits(tCtx)
		b := map[string][]byte{"q": f16s(r, tokens*tH*tHD, 1), "k_cache": f16s(r, cache, 1), "v_cache": f16s(r, cache, 1),
			"out": make([]byte, 2*tokens*tH*tHD), "partials": make([]byte, 4*tH*splits*(tHD+2)),
			"pos": u32s(34, 35, 36, 63, 64, 10), "seq": u32s(0, 1, 0, 1, 0, 1)}
		if k.Op == kernels.OpAttentionDecodeReduce {
			pt := f32s(r, tH*splits*(tHD+2), 1, 0)
			for h := range tH * splits {
				binary.LittleEndian.PutUint32(pt[4*(h*(tHD+2)+tHD+1):], math.Float32bits(float32(1+r.Float64())))
			}
			b["partials"] = pt
		}
		return kcase{s, p, b}, nil
	case kernels.OpBiasAdd, kernels.OpAdd, kernels.OpMul, kernels.OpScale, kernels.OpSoftcap, kernels.OpSiLU, kernels.OpGELU,
		kernels.OpSiLUGate, kernels.OpGELUGate, kernels.OpCopy, kernels.OpConvert, kernels.OpGatherRows:
		s := kernels.Shape{Tokens: tRows, Dim: tD, LastRow: true}
		n := tRows * tD
		outSize := 2 * n
		if k.Op == kernels.OpConvert {
			outSize = 4 * n
		}
		b := map[string][]byte{"x": f16s(r, 5*tD, 2), "a": f16s(r, n, 2), "b": f16s(r, n, 2), "gate": f16s(r, n, 2), "up": f16s(r, n, 2),
			"bias": f32s(r, tD, 1, 0), "rows": u32s(4, 0, 2), "out": make([]byte, outSize)}
		if k.Op == kernels.OpBiasAdd {
			b["x"] = f16s(r, n, 2)
		}
		alpha := float32(1.7)
		if k.Op == kernels.OpSoftcap {
			alpha = 3
		}
		return kcase{s, kernels.ElementwiseParams{NRows: tRows, NCols: tD, AStride: tD, BStride: tD, OutStride: tD, Alpha: alpha}, b}, nil
	case kernels.OpArgmax:
		s := kernels.Shape{Tokens: 2, Vocab: tVocab}
		return kcase{s, kernels.ArgmaxParams{N: tVocab, OutSlot: 1, NRows: 2},
			map[string][]byte{"logits": f16s(r, 2*tVocab, 3), "ids": make([]byte, 4*4)}}, nil
	case kernels.OpGumbelTopK:
		s := kernels.Shape{Tokens: 1, Vocab: tVocab}
		return kcase{s, kernels.SamplingParams{Vocab: tVocab, TopK: 40, Seed: 7, Position: 3, Temperature: 0.8, TopP: 0.9, MinP: 0.05},
			map[string][]byte{"logits": f16s(r, tVocab, 3)}}, nil
	case kernels.OpPool:
		// Inputs of 1, 5 and 17 rows back to back, an empty range and a
		// range past x (zeros); dim past one threadgroup's 256 columns.
		const dim, as, rows = 300, 320, 23
		ranges := u32s(0, 1, 1, 6, 6, 23, 4, 4, 22, 24)
		n := len(ranges) / 8
		s := kernels.Shape{Tokens: n, Dim: dim, Pooling: kernels.PoolMean, Normalize: true}
		return kcase{s, kernels.PoolParams{Dim: dim, NRows: uint32(n), AStride: as},
			map[string][]byte{"x": f16s(r, (rows-1)*as+dim, 2), "ranges": ranges, "out": make([]byte, 4*n*dim)}}, nil
	case kernels.OpMoERoute:
		// 100 experts (a lane takes 3 or 4), 8 chosen, 5 rows of a_stride
		// 104: each row a permutation of a grid of 1/8 (exact in F16), so
		// that the GPU's and the CPU's float probabilities order alike;
		// row 1's top three are equal (the lower experts first).
		const ne, kk, rows, as = 100, 8, 5, 104
		logits := make([]byte, 2*rows*as)
		for row := range rows {
			for i, v := range r.Perm(ne) {
				x := float32(v-ne/2) / 8
				if row == 1 && v >= ne-3 {
					x = 8
				}
				binary.LittleEndian.PutUint16(logits[2*(row*as+i):], dtype.Float16bits(x))
			}
		}
		s := kernels.Shape{Tokens: rows, Experts: ne, Slots: kk, Norm: true}
		return kcase{s, kernels.MoERouteParams{NExpert: ne, K: kk, NRows: rows, AStride: as},
			map[string][]byte{"logits": logits, "ids": make([]byte, 4*rows*kk), "weights": make([]byte, 4*rows*kk)}}, nil
	case kernels.OpGEMVID:
		// The down projection's form: 3 rows of 4 slots, each slot its own
		// x, 6 experts (one id past them: zeros); moeForms adds the gate and
		// up form (one x a row) and the decode row.
		const ne, ns, rows = 6, 4, 3
		ids := u32s(5, 0, 2, 5, 1, 1, 6, 3, 4, 0, 2, 5)
		s := kernels.Shape{Tokens: rows, N: tN, K: tK, Experts: ne, Slots: ns}
		b := map[string][]byte{"w": quantized(t, r, k.DType, ne*tN, tK), "x": f16s(r, rows*ns*tK, 1), "ids": ids, "y": make([]byte, 2*rows*ns*tN)}
		return kcase{s, kernels.GEMVIDParams{N: tN, K: tK, NSlots: ns, NRows: rows, NExpert: ne, XStride: ns * tK, XSlot: tK, YStride: ns * tN}, b}, nil
	case kernels.OpGEMMID:
		cs := gemmIDForms(t, r, k)
		return cs[0], nil
	case kernels.OpMoESum:
		// 300 elements (past one threadgroup of 256), 3 slots, 4 rows,
		// strides past the rows' widths.
		const n, ns, rows, ys, os = 300, 3, 4, 3*300 + 4, 300 + 2
		s := kernels.Shape{Tokens: rows, Dim: n, Slots: ns}
		return kcase{s, kernels.MoESumParams{N: n, NSlots: ns, NRows: rows, YStride: ys, OutStride: os},
			map[string][]byte{"y": f16s(r, rows*ys, 2), "weights": f32s(r, rows*ns, 0.1, 0.3), "out": make([]byte, 2*rows*os)}}, nil
	}
	return kcase{}, fmt.Errorf("no case for op %v", k.Op)
}

// planar is w, whole blocks of dt, in the planar layout.
func planar(t *testing.T, dt dtype.Type, w []byte) []byte {
	t.Helper()
	p := make([]byte, len(w))
	if err := kernels.ToPlanar(dt, p, w); err != nil {
		t.Fatal(err)
	}
	return p
}

// planarShapes are GEMV cases of the planar kernel beyond caseFor's: each
// row split the geometry chooses (128, 64 and 32 lanes along K; 8 and 4
// rows a group) and a last threadgroup with fewer rows than the others;
// for the planar small GEMM, the same over 2, 3 and 8 rows of X.
func planarShapes(t *testing.T, r *rand.Rand, k *kernels.Kernel) []kcase {
	var out []kcase
	for i, nk := range [][2]int{{70, 4096}, {38, 1536}, {4104, 4608}, {21, 1024}} {
		n, kk := nk[0], nk[1]
		if k.Variant&kernels.GLU != 0 && n%2 != 0 { // pairs of gate and up rows
			n++
		}
		w := planar(t, k.DType, quantized(t, r, k.DType, n, kk))
		if k.Op == kernels.OpGEMM {
			m := []int{2, 8, 8, 3}[i]
			b := map[string][]byte{"w": w, "x": f16s(r, m*kk, 1), "y": make([]byte, 2*m*n), "bias": f32s(r, n, 1, 0)}
			sh := kernels.Shape{Tokens: m, N: n, K: kk, VecX: true, Bias: i%2 == 0}
			out = append(out, kcase{sh, kernels.GEMMParams{M: uint32(m), N: uint32(n), K: uint32(kk), LDA: uint32(kk), LDC: uint32(n)}, b})
			continue
		}
		b := map[string][]byte{"w": w, "x": f16s(r, kk, 1), "y": make([]byte, 2*n), "bias": f32s(r, n, 1, 0)}
		sh := kernels.Shape{Tokens: 1, N: n, K: kk, VecX: true}
		out = append(out, kcase{sh, foldInputs(t, r, k, b, sh), b})
	}
	return out
}

// foldInputs adds the norm_fold forms' inputs to a GEMV case of shape s
// and returns its parameters: for _norm, partial sums of squares (as a
// _res GEMV leaves them, three of them); for _res, the residual (n rows,
// updated), the next norm's weight and a partial for each threadgroup of
// the launch.
func foldInputs(t *testing.T, r *rand.Rand, k *kernels.Kernel, b map[string][]byte, s kernels.Shape) kernels.GEMVParams {
	p := kernels.GEMVParams{N: uint32(s.N), K: uint32(s.K), Eps: 1e-5}
	switch {
	case k.Variant&kernels.Norm != 0:
		b["partials"], p.Parts = f32s(r, 3, 0, float64(s.K)*5), 3
	case k.Variant&kernels.Residual != 0:
		tun, err := chips.Resolve("h100-sxm", 0)
		if err != nil {
			t.Fatal(err)
		}
		l, err := k.Geometry(s, tun.Tuning())
		if err != nil {
			t.Fatal(err)
		}
		p.Parts = uint32(l.Grid[0])
		b["res"], b["norm_w"], b["partials"] = f16s(r, s.N, 4), f32s(r, s.N, 0.3, 1), make([]byte, 4*l.Grid[0])
	}
	return p
}

// quantizesX reports whether the CUDA kernel k quantizes x to 8 bits as
// the CPU twin does: the Q4_0, Q4_K and Q6_K GEMVs, which dot their quants with
// 8-bit x by dp4a (gemv_rows.h).
func quantizesX(k *kernels.Kernel) bool {
	return (k.Op == kernels.OpGEMV || k.Op == kernels.OpGEMVID) && (k.DType == dtype.Q4_0 || k.DType == dtype.Q4_K || k.DType == dtype.Q6_K) ||
		k.Op == kernels.OpGEMM && k.Variant&kernels.Planar != 0 // the planar GEMV's body, a row at a time
}

// quantizedProduct reports whether k multiplies by quantized weights.
func quantizedProduct(k *kernels.Kernel) bool {
	return (k.Op == kernels.OpGEMV || k.Op == kernels.OpGEMM || k.Op == kernels.OpGEMVID || k.Op == kernels.OpGEMMID) && k.DType.Quantized()
}

// product is the exact y = W·x (+ bias) of a GEMV or GEMM case, W
// dequantized as llama.cpp's reference does, x the F16 activations (for a
// _silu GEMV, silu(gate)·up in float), rounded to F16 as the kernels store y.
func product(t *testing.T, k *kernels.Kernel, c kcase) map[string][]byte {
	t.Helper()
	if k.Op == kernels.OpGEMVID || k.Op == kernels.OpGEMMID {
		return productID(t, k, c)
	}
	m, n, kk := c.shape.Tokens, c.shape.N, c.shape.K
	w := make([]float32, n*kk)
	wb := c.bufs["w"]
	if k.Variant&kernels.Planar != 0 { // back to the file's layout, row by row
		rb := len(wb) / n
		wb = make([]byte, len(wb))
		for r := range n {
			if err := kernels.PlanarRow(k.DType, wb[r*rb:(r+1)*rb], c.bufs["w"], n, r, kk); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := dtype.Dequantize(k.DType, wb, w); err != nil {
		t.Fatal(err)
	}
	f16 := func(b []byte, i int) float64 {
		return float64(dtype.Float16frombits(binary.LittleEndian.Uint16(b[2*i:])))
	}
	x := make([]float64, m*kk)
	for i := range x {
		if k.Variant&kernels.SiLU != 0 {
			g, u := f16(c.bufs["gate"], i), f16(c.bufs["up"], i)
			x[i] = g / (1 + math.Exp(-g)) * u
		} else {
			x[i] = f16(c.bufs["x"], i)
		}
	}
	sc := 1.0 // _norm: the RMS norm's scale from the partial sums
	if k.Variant&kernels.Norm != 0 {
		ss := 0.0
		for i := range int(c.params.(kernels.GEMVParams).Parts) {
			ss += float64(math.Float32frombits(binary.LittleEndian.Uint32(c.bufs["partials"][4*i:])))
		}
		sc = 1 / math.Sqrt(ss/float64(kk)+float64(c.params.(kernels.GEMVParams).Eps))
	}
	rnd := func(v float64) float64 { return float64(dtype.Float16frombits(dtype.Float16bits(float32(v)))) }
	y, res := make([]byte, 2*m*n), slices.Clone(c.bufs["res"])
	for r := range m {
		for o := range n {
			s := 0.0
			for e := range kk {
				s += float64(w[o*kk+e]) * x[r*kk+e]
			}
			s *= sc
			if k.Op == kernels.OpGEMM && k.Variant&kernels.GLU != 0 { // pairs: gate row o/2 or up row o/2, written gate rows then up rows
				d := (o&1)*(n/2) + o/2
				if c.shape.Bias {
					s += float64(math.Float32frombits(binary.LittleEndian.Uint32(c.bufs["bias"][4*d:])))
				}
				binary.LittleEndian.PutUint16(y[2*(r*n+d):], dtype.Float16bits(float32(s)))
				continue
			}
			if c.shape.Bias {
				s += float64(math.Float32frombits(binary.LittleEndian.Uint32(c.bufs["bias"][4*o:])))
			}
			if k.Variant&kernels.GLU != 0 { // rows gate and up in turn: the gate at o/2
				if o%2 == 0 {
					binary.LittleEndian.PutUint16(y[2*(r*n+o):], dtype.Float16bits(float32(rnd(s))))
					continue
				}
				g := f16(y, r*n+o-1)
				binary.LittleEndian.PutUint16(y[2*(r*n+o-1):], 0)
				binary.LittleEndian.PutUint16(y[2*(r*n/2+o/2):], dtype.Float16bits(float32(g/(1+math.Exp(-g))*rnd(s))))
				continue
			}
			if k.Variant&kernels.Residual != 0 { // res += the product; y = res·norm_w
				h := rnd(rnd(s) + f16(res, o))
				binary.LittleEndian.PutUint16(res[2*o:], dtype.Float16bits(float32(h)))
				s = h * float64(math.Float32frombits(binary.LittleEndian.Uint32(c.bufs["norm_w"][4*o:])))
			}
			binary.LittleEndian.PutUint16(y[2*(r*n+o):], dtype.Float16bits(float32(s)))
		}
	}
	if k.Variant&kernels.Residual != 0 {
		return map[string][]byte{"y": y, "res": res}
	}
	return map[string][]byte{"y": y}
}

// closeWithin is closeTo with a relative tolerance of rel.
func closeWithin(t *testing.T, k *kernels.Kernel, got, want map[string][]byte, rel float64) {
	t.Helper()
	compare(t, k, got, want, rel, "the CPU twin, against the exact product")
}

// closeTo compares the written buffers: F16 and F32 elements within tol of
// the largest reference magnitude (both compute in float, in different
// orders, and round to F16), -inf where the reference has it, uint32 ids
// exactly.
func closeTo(t *testing.T, k *kernels.Kernel, got, want map[string][]byte) {
	t.Helper()
	compare(t, k, got, want, 4e-3, "")
}

func compare(t *testing.T, k *kernels.Kernel, got, want map[string][]byte, rel float64, who string) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		switch {
		case name == "ids":
			if string(g) != string(w) {
				t.Errorf("%s: %s = % x, the CPU's % x", k.Name, name, g, w)
			}
			continue
		}
		f32 := name == "partials" || k.Op == kernels.OpConvert || k.Op == kernels.OpPool || name == "weights"
		vals := func(b []byte) []float64 {
			var out []float64
			if f32 {
				for i := 0; i+4 <= len(b); i += 4 {
					out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))))
				}
				return out
			}
			for i := 0; i+2 <= len(b); i += 2 {
				out = append(out, float64(dtype.Float16frombits(binary.LittleEndian.Uint16(b[i:]))))
			}
			return out
		}
		gv, wv := vals(g), vals(w)
		scale := 0.0
		for _, x := range wv {
			if !math.IsInf(x, 0) && !math.IsNaN(x) {
				scale = max(scale, math.Abs(x))
			}
		}
		tol := rel*scale + 1e-6
		bad, first := 0, -1
		for i := range wv {
			inf := math.IsInf(wv[i], 0) || math.IsInf(gv[i], 0)
			if inf && wv[i] != gv[i] || !inf && !(math.Abs(gv[i]-wv[i]) <= tol) {
				if first < 0 {
					first = i
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %s %s: %d of %d elements differ; [%d] = %g, want %g (tolerance %.3g)", k.Name, who, name, bad, len(wv), first, gv[first], wv[first], tol)
		}
	}
}

// Every GPU kernel of the catalog, compiled from the one kernel source by
// NVRTC, computes what its CPU twin computes on the same inputs: every
// weight type of the GEMVs, GEMMs and embeddings, every variant, with the
// guards the Rows forms keep (a position past the cache, a second sequence
// slot) and the options their constants select (bias, factors, softcap,
// window, last_row).
func TestEveryGPUKernelMatchesItsCPUTwin(t *testing.T) {
	g := cudaBackend(t)
	c := cpu.New(cpu.Options{Threads: 4})
	defer c.Close()
	n := 0
	for _, k := range gpuKernels(t) {
		t.Run(k.Name, func(t *testing.T) {
			cs, err := caseFor(t, rand.New(rand.NewPCG(1, uint64(len(k.Name)))), k)
			if err != nil {
				t.Fatal(err)
			}
			cases := []kcase{cs}
			if k.Op == kernels.OpGEMV || k.Op == kernels.OpArgmax || k.Op == kernels.OpGEMM { // x loaded element by element, and in 16-byte vectors
				vec := cs
				vec.shape.VecX = true
				cases = append(cases, vec)
			}
			if k.Op == kernels.OpGEMM && k.Variant&kernels.Small != 0 && k.DType.BlockSize() == 1 {
				cases = append(cases, smallGEMMOddK(t, rand.New(rand.NewPCG(7, uint64(len(k.Name)))), k))
			}
			if k.Op == kernels.OpGEMM && k.Variant&kernels.Small == 0 && k.DType.BlockSize() <= 32 {
				cases = append(cases, gemmHalfStep(t, rand.New(rand.NewPCG(4, uint64(len(k.Name)))), k))
			}
			if k.Op == kernels.OpArgmax && k.Act == dtype.F16 {
				cases = append(cases, wideArgmax(rand.New(rand.NewPCG(5, 5))))
			}
			if k.Op == kernels.OpAttentionPrefill && k.Variant&kernels.V2 != 0 {
				cases = append(cases, stagedPrefill(rand.New(rand.NewPCG(2, uint64(len(k.Name)))), cs))
			}
			if k.Op == kernels.OpPool {
				cases = poolModes(cs)
			}
			if k.Op == kernels.OpMoERoute || k.Op == kernels.OpGEMVID {
				cases = moeForms(rand.New(rand.NewPCG(3, uint64(len(k.Name)))), cs)
			}
			if k.Op == kernels.OpGEMMID {
				cases = gemmIDForms(t, rand.New(rand.NewPCG(1, uint64(len(k.Name)))), k)
			}
			if k.Variant&kernels.Planar != 0 {
				cases = append(cases, planarShapes(t, rand.New(rand.NewPCG(6, uint64(len(k.Name)))), k)...)
			}
			for _, cs := range cases {
				want := run(t, c, k, cs)
				got := run(t, g, k, cs)
				if quantizedProduct(k) {
					// The CPU twin quantizes x to 8 bits first (as llama.cpp's CPU
					// backend does), and so do the CUDA Q4_0, Q4_K and Q6_K GEMVs (int8_dot,
					// gemv_rows.h), the same way: those are held to the twin
					// tightly. The other GPU kernels multiply by x as it is: they
					// are held to the exact product of the dequantized weights
					// tightly, and the CPU within its 8-bit rounding.
					ref := product(t, k, cs)
					if quantizesX(k) {
						closeTo(t, k, got, want)
					} else {
						closeTo(t, k, got, ref)
					}
					closeWithin(t, k, want, ref, 2e-2)
					continue
				}
				closeTo(t, k, got, want)
			}
		})
		n++
	}
	t.Logf("%d kernels held to their CPU twins", n)
}

// gpuKernels are the kernels of the one GPU source, in catalog order.
func gpuKernels(t *testing.T) []*kernels.Kernel {
	es, err := gpu.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var out []*kernels.Kernel
	for _, k := range kernels.All() {
		if es[k.Name] != nil {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		t.Fatal("no GPU kernels")
	}
	return out
}

// The cases themselves, on the CPU alone (so CI checks them though it has
// no GPU): every GPU kernel has one, it resolves and binds as a plan's
// command would, and what it writes is finite and not all zeros, so the
// comparison above compares something.
func TestEveryKernelCaseRunsOnTheCPU(t *testing.T) {
	c := cpu.New(cpu.Options{Threads: 2})
	defer c.Close()
	for _, k := range gpuKernels(t) {
		t.Run(k.Name, func(t *testing.T) {
			cs, err := caseFor(t, rand.New(rand.NewPCG(1, uint64(len(k.Name)))), k)
			if err != nil {
				t.Fatal(err)
			}
			cases := []kcase{cs}
			if k.Op == kernels.OpPool {
				cases = poolModes(cs)
			}
			if k.Op == kernels.OpMoERoute || k.Op == kernels.OpGEMVID {
				cases = moeForms(rand.New(rand.NewPCG(3, uint64(len(k.Name)))), cs)
			}
			if k.Op == kernels.OpGEMMID {
				cases = gemmIDForms(t, rand.New(rand.NewPCG(1, uint64(len(k.Name)))), k)
			}
			if k.Variant&kernels.Planar != 0 {
				cases = append(cases, planarShapes(t, rand.New(rand.NewPCG(6, uint64(len(k.Name)))), k)...)
			}
			for _, cs := range cases {
				out := run(t, c, k, cs)
				if quantizedProduct(k) { // the reference the GPU is held to
					closeWithin(t, k, out, product(t, k, cs), 2e-2)
				}
				if len(out) == 0 {
					t.Fatal("the case binds no buffer the kernel writes")
				}
				for name, b := range out {
					nonzero := false
					for _, x := range b {
						nonzero = nonzero || x != 0
					}
					if !nonzero {
						t.Errorf("%s: all zeros", name)
					}
				}
			}
		})
	}
}

// stagedPrefill is a prefill case the v2 kernels stage in threadgroup
// memory: 40 rows of one sequence slot at positions 0..39 (a full
// threadgroup of 32 rows and a partial one, two key tiles), after c's
// shape (softcap, window).
func stagedPrefill(r *rand.Rand, c kcase) kcase {
	const n = 40
	s := c.shape
	s.Tokens = n
	p := c.params.(kernels.AttentionParams)
	p.NTokens, p.Position, p.KVLen = n, 0, n
	pos, seq := make([]uint32, n), make([]uint32, n)
	for i := range pos {
		pos[i] = uint32(i)
	}
	b := map[string][]byte{"q": f16s(r, n*tH*tHD, 1), "k_cache": c.bufs["k_cache"], "v_cache": c.bufs["v_cache"],
		"out": make([]byte, 2*n*tH*tHD), "pos": u32s(pos...), "seq": u32s(seq...)}
	return kcase{s, p, b}
}

// poolModes is c under every pooling mode, normalized and not (the
// constants the compiler sets from the model's pooling type).
func poolModes(c kcase) []kcase {
	var out []kcase
	for _, mode := range []int{kernels.PoolMean, kernels.PoolCLS, kernels.PoolLast} {
		for _, norm := range []bool{false, true} {
			v := c
			v.shape.Pooling, v.shape.Normalize = mode, norm
			out = append(out, v)
		}
	}
	return out
}

// moeForms is c with the other forms the compiler emits. moe_route:
// without norm_w; Mixtral's 2 of 8; the limits, 32 of 1024 (a grid of 1/8
// again, the lowest probabilities underflowing to 0). gemv_id: x loaded in
// 16-byte vectors; the gate and up projections' form, one x a row for
// every slot (x_slot 0); a decode row of 8 slots with a repeated expert.
func moeForms(r *rand.Rand, c kcase) []kcase {
	out := []kcase{c}
	switch p := c.params.(type) {
	case kernels.MoERouteParams:
		off := c
		off.shape.Norm = false
		out = append(out, off)
		for _, f := range [][2]int{{8, 2}, {1024, 32}} {
			ne, kk, rows := f[0], f[1], 3
			logits := make([]byte, 2*rows*ne)
			for row := range rows {
				for i, v := range r.Perm(ne) {
					binary.LittleEndian.PutUint16(logits[2*(row*ne+i):], dtype.Float16bits(float32(v-ne/2)/8))
				}
			}
			out = append(out, kcase{kernels.Shape{Tokens: rows, Experts: ne, Slots: kk, Norm: true},
				kernels.MoERouteParams{NExpert: uint32(ne), K: uint32(kk), NRows: uint32(rows), AStride: uint32(ne)},
				map[string][]byte{"logits": logits, "ids": make([]byte, 4*rows*kk), "weights": make([]byte, 4*rows*kk)}})
		}
	case kernels.GEMVIDParams:
		vec := c
		vec.shape.VecX = true
		one := c
		q := p
		q.XSlot, q.XStride = 0, tK
		one.params = q
		one.bufs = map[string][]byte{"w": c.bufs["w"], "x": f16s(r, int(p.NRows)*tK, 1), "ids": c.bufs["ids"], "y": make([]byte, len(c.bufs["y"]))}
		dec := c
		d := p
		d.NSlots, d.NRows, d.XStride, d.YStride = 8, 1, 8*tK, 8*tN
		dec.shape.Slots, dec.shape.Tokens = 8, 1
		dec.params = d
		dec.bufs = map[string][]byte{"w": c.bufs["w"], "x": f16s(r, 8*tK, 1), "ids": u32s(3, 0, 5, 3, 1, 2, 4, 7), "y": make([]byte, 2*8*tN)}
		out = append(out, vec, one, dec)
	}
	return out
}

// productID is the exact product of a gemv_id case: for each row and
// slot, the chosen expert's dequantized matrix times the slot's F16 x,
// rounded to F16; zeros for an id past the experts.
func productID(t *testing.T, k *kernels.Kernel, c kcase) map[string][]byte {
	t.Helper()
	p := c.params.(kernels.GEMVIDParams)
	n, kk, ns, ne := int(p.N), int(p.K), int(p.NSlots), int(p.NExpert)
	w := make([]float32, ne*n*kk)
	if err := dtype.Dequantize(k.DType, c.bufs["w"], w); err != nil {
		t.Fatal(err)
	}
	xb, ids := c.bufs["x"], c.bufs["ids"]
	y := make([]byte, len(c.bufs["y"]))
	for row := range int(p.NRows) {
		for j := range ns {
			e := int(binary.LittleEndian.Uint32(ids[4*(row*ns+j):]))
			x0 := row*int(p.XStride) + j*int(p.XSlot)
			for o := range n {
				s := 0.0
				if e < ne {
					for i := range kk {
						x := float64(dtype.Float16frombits(binary.LittleEndian.Uint16(xb[2*(x0+i):])))
						s += float64(w[(e*n+o)*kk+i]) * x
					}
				}
				binary.LittleEndian.PutUint16(y[2*(row*int(p.YStride)+j*n+o):], dtype.Float16bits(float32(s)))
			}
		}
	}
	return map[string][]byte{"y": y}
}

// gemmIDForms are gemm_id's cases, batches whose pairs the kernel groups
// by expert: 37 rows choosing 8 of 16 experts, each slot its own x
// (x_slot K, the down projection) and one x a row (x_slot 0, gate and
// up), expert 3 in slot 0 of most rows, experts 12 to 15 chosen by no
// row, one id past the experts; 300 rows choosing 2 of 4 (x_slot K, then
// 0), expert 1 chosen by all rows but the one whose slot 0 is past the
// experts, expert 3 by none; and 300 rows of 8 slots of which 7 name
// expert 5 in most rows (2000-odd pairs: more than one threadgroup's list
// holds, so its tiles run in several passes). N is tN, 96: a whole tile
// of 64 columns and a part of one. y starts as noise, so the zeros of an
// id past the experts are checked.
func gemmIDForms(t *testing.T, r *rand.Rand, k *kernels.Kernel) []kcase {
	t.Helper()
	form := func(w []byte, rows, ne, ns, xslot int, pick func(row, j int) uint32) kcase {
		ids := make([]uint32, rows*ns)
		for row := range rows {
			for j := range ns {
				ids[row*ns+j] = pick(row, j)
			}
		}
		xs := ns * xslot
		if xslot == 0 {
			xs = tK
		}
		s := kernels.Shape{Tokens: rows, N: tN, K: tK, Experts: ne, Slots: ns}
		p := kernels.GEMVIDParams{N: tN, K: tK, NSlots: uint32(ns), NRows: uint32(rows), NExpert: uint32(ne),
			XStride: uint32(xs), XSlot: uint32(xslot), YStride: uint32(ns * tN)}
		b := map[string][]byte{"w": w, "x": f16s(r, (rows-1)*xs+(ns-1)*xslot+tK, 1), "ids": u32s(ids...), "y": f16s(r, rows*ns*tN, 1)}
		return kcase{s, p, b}
	}
	w16, w4 := quantized(t, r, k.DType, 16*tN, tK), quantized(t, r, k.DType, 4*tN, tK)
	// 8 of 16: slot 0 expert 3 (row 5: 16, past the experts), the others
	// distinct experts of 0..11 without 3.
	perms := make([][]int, 300)
	for i := range perms {
		perms[i] = r.Perm(11)
	}
	of12 := func(row, j int) uint32 {
		if j == 0 {
			if row == 5 {
				return 16
			}
			return 3
		}
		e := uint32(perms[row][j-1])
		if e >= 3 {
			e++
		}
		return e
	}
	of4 := func(row, j int) uint32 {
		switch {
		case j == 0 && row == 7:
			return 4
		case j == 0:
			return 1
		}
		return uint32(2 * (row % 2)) // 0 or 2
	}
	skewed := func(row, j int) uint32 {
		if j < 7 && row%40 != 9 {
			return 5
		}
		if row == 250 && j == 7 {
			return 1 << 31
		}
		return uint32(perms[row][j%4])
	}
	return []kcase{
		form(w16, 37, 16, 8, tK, of12),
		form(w16, 37, 16, 8, 0, of12),
		form(w4, 300, 4, 2, tK, of4),
		form(w4, 300, 4, 2, 0, of4),
		form(w16, 300, 16, 8, 0, skewed),
	}
}
