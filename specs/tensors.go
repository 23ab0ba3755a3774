package specs

import (
	"fmt"
	"strings"
)

// Tensor is one tensor a model of the spec has, or may have.
type Tensor struct {
	Name     string  // in the file: blk.3.attn_q.weight
	Logical  string  // in the spec: attn_q
	Layer    int     // -1 for a global tensor
	Shape    []int64 // ggml order: Shape[0] is the input (contiguous) dimension
	Optional bool
	// Present is false only for an optional tensor the model lacks (as
	// Resolve saw it); Fallback then names the tensor used in its place,
	// if any.
	Present  bool
	Fallback string
	// F32: the file stores it F32 whatever its other tensors' type, as
	// llama.cpp's converters write it (BERT's token types, which llama.cpp
	// adds as an F32 view).
	F32  bool
	Role TensorRole
	Pos  Pos // the declaration
}

// IsBias and IsNorm say what the tensor is to the program.
func (t Tensor) IsBias() bool { return t.Role == RoleBias }
func (t Tensor) IsNorm() bool { return t.Role == RoleNorm }

// hpEvaluator evaluates expressions over resolved hparams (shapes,
// conditions, op arguments: no metadata is read after Resolve).
func (a *Arch) hpEvaluator(hp *HParams) *evaluator {
	return &evaluator{a: a, prefix: hp.Arch, md: NewMapMetadata(nil), hparam: func(name string, layer int) (Value, error) {
		v, ok := hp.Value(name, layer)
		if !ok {
			return Value{}, fmt.Errorf("hparam %s has no value for layer %d", name, layer)
		}
		return v, nil
	}}
}

// Tensors lists the tensors of a model with the given hparams: the global
// ones in declaration order, then each layer's. A per-layer tensor whose
// condition is false for a layer is not listed for it, and neither is a
// tensor the program does not use (a child spec that replaces a block of
// its parent's program leaves the parent's tensors for it unused).
func (a *Arch) Tensors(hp *HParams) ([]Tensor, error) {
	ev := a.hpEvaluator(hp)
	var out []Tensor
	var c errs
	add := func(d *tensorDecl, layer int) {
		if !a.used(d.logical) {
			return
		}
		if d.cond != nil {
			v, err := ev.eval(d.cond, layer)
			if err != nil {
				c.add(ErrBadValue, d.cond.at(), d.path, "%v", err)
				return
			}
			if !v.Bool {
				return
			}
		}
		t := Tensor{Name: d.pattern, Logical: d.logical, Layer: layer, Optional: d.optional, F32: d.f32, Present: true, Pos: d.pos}
		if layer >= 0 {
			t.Name = tensorName(d.pattern, layer)
		}
		for _, s := range d.shape {
			v, err := ev.eval(s, layer)
			if err != nil {
				c.add(ErrBadValue, s.at(), d.path, "%v", err)
				return
			}
			if v.Int <= 0 {
				c.add(ErrShape, s.at(), d.path, "%s: dimension %s = %d", t.Name, exprString(s), v.Int)
				return
			}
			t.Shape = append(t.Shape, v.Int)
		}
		if d.optional {
			t.Present = hp.present[t.Name]
			if !t.Present && d.fallback != "" {
				f := a.tensorIx[d.fallback]
				t.Fallback = f.pattern
				if layer >= 0 {
					t.Fallback = tensorName(f.pattern, layer)
				}
			}
		}
		if r, ok := a.roles[d.logical]; ok {
			t.Role = r
		} else if strings.HasSuffix(d.pattern, ".bias") {
			t.Role = RoleBias
		}
		out = append(out, t)
	}
	for _, d := range a.tensors {
		if !d.perLayer {
			add(d, -1)
		}
	}
	for l := 0; l < hp.Layers; l++ {
		for _, d := range a.tensors {
			if d.perLayer {
				add(d, l)
			}
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// used reports whether the program uses a tensor, directly or as the
// fallback of one it uses.
func (a *Arch) used(logical string) bool {
	if _, ok := a.roles[logical]; ok {
		return true
	}
	for _, d := range a.tensors {
		if _, ok := a.roles[d.logical]; ok && d.fallback == logical {
			return true
		}
	}
	return false
}

// TensorInfo is a tensor as a model file lists it.
type TensorInfo struct {
	Name  string
	Shape []int64 // ggml order
}

// CheckTensorTable holds a model's tensor table to the tensors a spec wants
// (from Tensors): every required tensor present, every present tensor of
// the declared shape, and no tensor the spec does not know (it would be a
// weight the program ignores). Errors name the tensor.
func CheckTensorTable(want []Tensor, have []TensorInfo) error {
	var c errs
	byName := make(map[string]TensorInfo, len(have))
	for _, h := range have {
		byName[h.Name] = h
	}
	known := make(map[string]bool, len(want))
	for _, w := range want {
		known[w.Name] = true
		h, ok := byName[w.Name]
		if !ok {
			if !w.Optional {
				c.add(ErrMissingTensor, Pos{}, "", "tensor %q (%s, declared at %s) is missing", w.Name, w.Logical, w.Pos)
			}
			continue
		}
		if !sameShape(h.Shape, w.Shape) {
			c.add(ErrShape, Pos{}, "", "tensor %q has shape %s, the spec wants %s (%s, declared at %s)",
				w.Name, shapeString(h.Shape), shapeString(w.Shape), w.Logical, w.Pos)
		}
	}
	for _, h := range have {
		if !known[h.Name] {
			c.add(ErrUnexpectedTens, Pos{}, "", "tensor %q is not one the spec knows", h.Name)
		}
	}
	return c.err()
}

// sameShape compares shapes, ignoring trailing dimensions of 1 (ggml pads
// every shape to four).
func sameShape(a, b []int64) bool {
	a, b = trimOnes(a), trimOnes(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func trimOnes(s []int64) []int64 {
	for len(s) > 1 && s[len(s)-1] == 1 {
		s = s[:len(s)-1]
	}
	return s
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
