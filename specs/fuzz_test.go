package specs_test

import (
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs"
)

// FuzzLoad feeds arbitrary bytes as a spec that may inherit base.yaml:
// loading must return errors, never panic, and a spec that loads must
// resolve stories260K's metadata without panicking either. Only base.yaml
// is loaded with it, so that an execution (and the minimization of an
// input) stays fast.
func FuzzLoad(f *testing.F) {
	builtins := builtinFiles(&testing.T{})
	f.Add(builtins["archs/phi3.yaml"])
	f.Add([]byte("inherit: base\narchitectures: [fz]\nrope_style: norm\ntensors:\n  e: token_embd.weight [dim, vocab]\n  n: blk.{layer}.n.weight [dim]\n" +
		"prologue:\n  - x = embedding(e)\nlayer:\n  b:\n    - x = add(x, rmsnorm(x, n)) if layer % 2 == 0\nepilogue:\n  - logits = matmul(x, e)\n"))
	f.Add([]byte("inherit: base\narchitectures: [fz]\nhparams:\n  v: 'meta.rope.freq_base ?? (1 / 0)'\n  w: {key: attention.sliding_window, default: select(v > 0, 1, 2)}\n"))
	base := builtins["archs/base.yaml"]
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := specs.Load(map[string][]byte{"archs/base.yaml": base, "archs/fz.yaml": data})
		if err != nil {
			return
		}
		for _, g := range r.Architectures() {
			a, _ := r.ForArchitecture(g)
			md := stories260K()
			for k, v := range md.KV {
				if rest, ok := strings.CutPrefix(k, "llama."); ok {
					md.KV[g+"."+rest] = v
				}
			}
			md.KV["general.architecture"] = specs.StringValue(g)
			if hp, err := a.Resolve(md); err == nil {
				_, _ = a.Tensors(hp)
				_, _ = a.Program(hp)
			}
		}
	})
}
