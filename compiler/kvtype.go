package compiler

import (
	"fmt"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// kvType resolves Options.KVType for a plan of activations act: the
// cache's element type (kernels.KVTypes, by its lower-case name; "" is
// the default, F16) and the kernels' variant flag for it. A GPU plan (F16
// activations) takes only F16: its kernels read no other cache.
func kvType(name string, act dtype.Type) (dtype.Type, kernels.Variant, error) {
	t, v, found := dtype.F16, kernels.Variant(0), name == ""
	var names []string
	for _, k := range kernels.KVTypes {
		n := strings.ToLower(k.String())
		names = append(names, n)
		if !found && strings.EqualFold(name, n) {
			t, found = k, true
			v, _ = kernels.KVVariant(k)
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("%w: KV cache type %q: one of %s", ErrOptions, name, strings.Join(names, ", "))
	}
	if t != dtype.F16 && act != dtype.F32 {
		return 0, 0, fmt.Errorf("%w: a %v KV cache is for CPU plans; the GPU kernels read an F16 cache (compile for a cpu-* chip, or leave the KV type at f16)", ErrOptions, t)
	}
	return t, v, nil
}

// kvRowBytes is the bytes of one cached row of n elements of type t, or
// an error when n is not whole blocks of it.
func kvRowBytes(t dtype.Type, n int) (uint64, error) {
	if bs := t.BlockSize(); n%bs != 0 {
		return 0, fmt.Errorf("%w: a %v KV cache needs heads of whole %d-element blocks; this model's are %d", ErrUnsupported, t, bs, n)
	}
	return uint64(n / t.BlockSize() * t.BlockBytes()), nil
}
