package kernels

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/specs/chips"
)

// Kernel is one entry of the catalog: everything the compiler needs to emit
// a command for it and everything a backend must honour to implement it.
// Kernels are shared: treat them as read-only.
type Kernel struct {
	Spec
	Name    string
	Summary string // what it computes, one line
	// Bindings lists the buffer slots in slot order, the parameter struct's
	// last. A binding with When is bound only when that bool constant is true.
	Bindings []Binding
	// Params is the layout of the parameter struct, bound at ParamSlot.
	Params    *Struct
	ParamSlot int
	// Patchable maps each patch role of the parameter struct to its byte
	// offset: Patchable["position"] = 24 for the attention kernels.
	Patchable map[string]int
	// Constants are the function constants, in index order; Geometry gives
	// their values for a shape.
	Constants []Constant
	// GeometryDoc is the geometry rule in one line (geometry.go has it whole).
	GeometryDoc string
	geometry    geometryRule
}

// Geometry computes how a command of this kernel runs for shape s under
// tuning t: the grid, the threadgroup, its memory and the constants'
// values. It fails when s lacks a field the rule needs or breaks a limit.
func (k *Kernel) Geometry(s Shape, t chips.Tuning) (Launch, error) {
	l, err := k.geometry(k, s, t)
	if err != nil {
		return Launch{}, err
	}
	if n := l.Threads(); n <= 0 || n > MaxThreads || n%SIMDWidth != 0 {
		return Launch{}, fmt.Errorf("kernels: %s: %d threads per threadgroup (a multiple of %d, at most %d)", k.Name, n, SIMDWidth, MaxThreads)
	}
	if l.TGMem > MaxTGMemory {
		return Launch{}, fmt.Errorf("kernels: %s: %d bytes of threadgroup memory (at most %d)", k.Name, l.TGMem, MaxTGMemory)
	}
	for _, g := range l.Grid {
		if g <= 0 {
			return Launch{}, fmt.Errorf("kernels: %s: empty grid %v", k.Name, l.Grid)
		}
	}
	return l, nil
}

// Binding is one buffer slot of a kernel.
type Binding struct {
	Slot   int    `json:"slot"`
	Name   string `json:"name"`
	Access Access `json:"access"`
	Role   Role   `json:"role"`
	When   string `json:"when,omitempty"` // bound only when this bool constant is true
	Doc    string `json:"doc"`            // shape and dtype of what is bound
	// Elem is the element type of what the binding holds when it is not
	// the buffer's ("u32", "f32": a route's halves in activation scratch);
	// "" when it is the buffer's (or the kernel's activation type).
	Elem string `json:"elem,omitempty"`
}

// Access says whether a kernel reads or writes a binding.
type Access uint8

const (
	Read Access = iota
	Write
	ReadWrite
)

func (a Access) String() string { return [...]string{"read", "write", "read_write"}[a] }

// MarshalText writes the access's name.
func (a Access) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Role says what kind of buffer a binding takes, and so which buffer of the
// plan the compiler may bind there.
type Role uint8

const (
	RoleWeight     Role = iota // model tensors: weights, norms, biases, RoPE factors (read-only, mmapped)
	RoleActivation             // scratch activations, in the activation dtype
	RoleKV                     // a layer's K or V cache, F16, head-major
	RoleScratch                // kernel-private intermediate results (float)
	RoleIO                     // buffers the host reads or writes: token ids (uint32), F32 logits
	RoleParam                  // the parameter struct
)

func (r Role) String() string {
	return [...]string{"weight", "activation", "kv", "scratch", "io", "param"}[r]
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Constant is a function constant of a kernel: a value fixed when the
// pipeline is created, so the kernel is specialized for it.
type Constant struct {
	Index int       `json:"index"`
	Name  string    `json:"name"`
	Type  ConstType `json:"type"`
	Doc   string    `json:"doc"`
}

// ConstType is a function constant's type.
type ConstType uint8

const (
	ConstBool ConstType = iota // MSL bool
	ConstUint                  // MSL uint (32 bits)
)

func (c ConstType) String() string { return [...]string{"bool", "uint"}[c] }

// MarshalText writes the type's name.
func (c ConstType) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// ErrNoKernel is the error (wrapped) for a kernel the catalog does not have:
// the compiler refuses the model rather than guess another.
var ErrNoKernel = errors.New("no kernel")

// NoKernelError says which op, dtype and variant found no kernel.
type NoKernelError struct {
	Spec Spec
	Name string // the name the convention gives it
}

func (e *NoKernelError) Error() string {
	s := e.Spec
	var b strings.Builder
	fmt.Fprintf(&b, "kernels: no kernel %s: no %v", e.Name, s.Op)
	if s.Variant != 0 {
		fmt.Fprintf(&b, " (%v)", s.Variant)
	}
	if s.Op.Typed() {
		if s.Op == OpConvert {
			fmt.Fprintf(&b, " to %v", s.DType)
		} else {
			fmt.Fprintf(&b, " for %v weights", s.DType)
		}
	}
	fmt.Fprintf(&b, " with %v activations", s.Act)
	if s.Op.Typed() && s.Op != OpConvert {
		var have []string
		for _, k := range catalog {
			if k.Op == s.Op && k.Variant == s.Variant && k.Act == s.Act {
				have = append(have, k.DType.String())
			}
		}
		if len(have) > 0 {
			fmt.Fprintf(&b, " (the catalog has %s)", strings.Join(have, ", "))
		}
	}
	return b.String()
}

func (e *NoKernelError) Unwrap() error { return ErrNoKernel }

// Lookup returns the kernel named name.
func Lookup(name string) (*Kernel, bool) {
	k, ok := byName[name]
	return k, ok
}

// ReadsWholeCache reports whether the kernel named name is a decode
// attention, whose command's bytes_read counts a sequence's whole K and V
// cache (the plan's context); at n cached positions it reads n/ctx of it.
// Rooflines scale those commands' reads to the context they run at.
func ReadsWholeCache(name string) bool {
	k, ok := byName[name]
	return ok && k.Op == OpAttentionDecode
}

// All returns every kernel, in catalog order: by op family, then as the
// family lists them (activation dtype, weight dtype, variant). The slice is
// a copy; the kernels are shared.
func All() []*Kernel { return slices.Clone(catalog) }

// Find returns the kernel of a spec, or an error wrapping ErrNoKernel that
// names the op, the dtype and the variant when the catalog has none.
func Find(s Spec) (*Kernel, error) {
	n, err := s.Name()
	if err != nil {
		return nil, err
	}
	if k, ok := byName[n]; ok {
		return k, nil
	}
	return nil, &NoKernelError{Spec: s, Name: n}
}

// Supported reports whether weights of type dt can be compiled: the catalog
// has a GEMV, a prefill GEMM and an embedding lookup for it (F16
// activations; every F16 kernel of a weight type has its F32 twin).
func Supported(dt dtype.Type) bool {
	for _, s := range []Spec{{Op: OpGEMV}, {Op: OpGEMM}, {Op: OpGEMM, Variant: Small}, {Op: OpEmbedding}} {
		s.DType, s.Act = dt, dtype.F16
		if _, err := Find(s); err != nil {
			return false
		}
	}
	return true
}

// WeightTypes returns the weight types the catalog supports, in code order.
func WeightTypes() []dtype.Type { return slices.Clone(weightTypes) }

// SelectGEMV returns the GEMV kernel the tuning picks for a weight of type
// dt with n rows of k elements (the shape chips.Tuning.GEMV decides on);
// silu asks for the form fused with the SiLU gate. An error wrapping
// ErrNoKernel when the catalog has no such kernel (a type without GEMVs, or
// a fused form a variant lacks: the caller may then not fuse).
func SelectGEMV(t chips.Tuning, dt dtype.Type, n, k int, silu bool, act dtype.Type) (*Kernel, error) {
	info, ok := dt.Lookup()
	if !ok {
		return nil, fmt.Errorf("kernels: gemv: %w: code %d", dtype.ErrUnknownType, uint32(dt))
	}
	v, err := GEMVVariant(t.GEMV(info.Name, n, k))
	if err != nil {
		return nil, err
	}
	if silu {
		v |= SiLU
	}
	return Find(Spec{Op: OpGEMV, DType: dt, Variant: v, Act: act})
}

// SelectDecodeAttention returns the decode attention kernel the tuning picks
// for kvLen cached positions.
func SelectDecodeAttention(t chips.Tuning, kvLen int, act dtype.Type) (*Kernel, error) {
	v, err := AttentionVariant(t.DecodeAttention(kvLen))
	if err != nil {
		return nil, err
	}
	return Find(Spec{Op: OpAttentionDecode, Variant: v, Act: act})
}

// SelectPrefillAttention returns the prefill attention kernel the tuning
// picks for a batch of tokens.
func SelectPrefillAttention(t chips.Tuning, tokens int, act dtype.Type) (*Kernel, error) {
	v, err := AttentionVariant(t.PrefillAttention(tokens))
	if err != nil {
		return nil, err
	}
	return Find(Spec{Op: OpAttentionPrefill, Variant: v, Act: act})
}

// The catalog, built once at start-up from the families (families.go) and
// checked: a malformed entry stops the program before it can reach a plan.
var catalog, byName = buildCatalog()

func buildCatalog() ([]*Kernel, map[string]*Kernel) {
	var catalog []*Kernel
	byName := map[string]*Kernel{}
	for _, f := range families {
		for _, s := range f.instances() {
			k, err := f.build(s)
			if err == nil {
				err = checkKernel(k)
			}
			if err != nil {
				panic(err)
			}
			if _, dup := byName[k.Name]; dup {
				panic("kernels: duplicate kernel " + k.Name)
			}
			catalog = append(catalog, k)
			byName[k.Name] = k
		}
	}
	return catalog, byName
}

// build makes the kernel of spec s of family f.
func (f *family) build(s Spec) (*Kernel, error) {
	if s.Op != f.op {
		return nil, fmt.Errorf("kernels: family %v lists a spec of %v", f.op, s.Op)
	}
	n, err := s.Name()
	if err != nil {
		return nil, err
	}
	ps, ok := structsByType[reflect.TypeOf(f.params)]
	if !ok {
		return nil, fmt.Errorf("kernels: %s: %T is not a parameter struct", n, f.params)
	}
	k := &Kernel{
		Spec:        s,
		Name:        n,
		Summary:     f.summary(s),
		Bindings:    f.bindings(s),
		Params:      ps,
		Patchable:   ps.Patchable(),
		GeometryDoc: f.geometryDoc(s),
		geometry:    f.geometry,
	}
	if f.constants != nil {
		k.Constants = f.constants(s)
	}
	k.Bindings = append(k.Bindings, Binding{Slot: len(k.Bindings), Name: "params", Access: Read, Role: RoleParam, Doc: ps.Name})
	for i := range k.Bindings {
		k.Bindings[i].Slot = i
	}
	k.ParamSlot = len(k.Bindings) - 1
	return k, nil
}

// checkKernel is the catalog's own test, run at start-up: slots and
// constant indices are dense, a conditional binding names a bool constant,
// and the name is the one the convention gives the spec.
func checkKernel(k *Kernel) error {
	if n, err := k.Spec.Name(); err != nil || n != k.Name {
		return fmt.Errorf("kernels: %s: the convention names its spec %q (%v)", k.Name, n, err)
	}
	consts := map[string]ConstType{}
	for i, c := range k.Constants {
		if c.Index != i {
			return fmt.Errorf("kernels: %s: constant %s has index %d, want %d", k.Name, c.Name, c.Index, i)
		}
		if _, dup := consts[c.Name]; dup {
			return fmt.Errorf("kernels: %s: two constants named %s", k.Name, c.Name)
		}
		consts[c.Name] = c.Type
	}
	names := map[string]bool{}
	for i, b := range k.Bindings {
		if b.Slot != i || names[b.Name] {
			return fmt.Errorf("kernels: %s: binding %s at slot %d (index %d, or a duplicate name)", k.Name, b.Name, b.Slot, i)
		}
		names[b.Name] = true
		if t, ok := consts[b.When]; b.When != "" && (!ok || t != ConstBool) {
			return fmt.Errorf("kernels: %s: binding %s is bound when %q, not a bool constant", k.Name, b.Name, b.When)
		}
		if (b.Role == RoleParam) != (i == k.ParamSlot) {
			return fmt.Errorf("kernels: %s: the parameter struct must be the last binding", k.Name)
		}
	}
	return nil
}
