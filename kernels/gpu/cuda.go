package gpu

import (
	"fmt"
	"strings"
)

// CUDA is a self-contained CUDA C++ translation unit holding the entries
// names (all of one family) with the function constants' values fixed
// (values by constant name; a constant not given is 0, false): the CUDA
// prelude, the parameter structs, the constants as constexpr values, the
// bodies, and an extern "C" __global__ function per entry. NVRTC compiles
// it with -default-device (runtime/cuda); clang's CUDA front end checks it
// in CI (shim/cuda_shim.h first).
//
// An entry's parameters are its buffers' device pointers in the body's
// order and last a pointer to the parameter struct in device memory (the
// bound lengths that bounds.h reads follow it there). Each entry lets the
// next command launch and waits for the commands before it (programmatic
// dependent launch, prelude_cuda.h) after reading its parameters, which
// only the host writes. Threadgroup memory
// is the launch's dynamic shared memory; thread positions are Metal's,
// from the block's: the threadgroup index is blockIdx, the thread index
// in it is threadIdx linearized x-first.
func CUDA(names []string, values map[string]uint32, es map[string]*Entry) (string, error) {
	if len(names) == 0 {
		return "", fmt.Errorf("gpu: no entries")
	}
	var file string
	for _, n := range names {
		e, ok := es[n]
		if !ok {
			return "", fmt.Errorf("gpu: no entry for kernel %s", n)
		}
		if file != "" && e.File != file {
			return "", fmt.Errorf("gpu: %s (%s) and %s (%s) are not one family", names[0], file, n, e.File)
		}
		file = e.File
	}
	cs, err := Constants(file, es)
	if err != nil {
		return "", err
	}
	seen := map[string]bool{"prelude_cuda.h": true}
	prelude, err := Expand("prelude_cuda.h", seen)
	if err != nil {
		return "", err
	}
	seen["ShaderTypes.h"] = true
	types, err := Expand("ShaderTypes.h", seen)
	if err != nil {
		return "", err
	}
	body, err := Expand(file, seen)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// akunu CUDA source generated from kernels/gpu/%s (kernels/gpu.CUDA)\n", file)
	b.WriteString(prelude + "\n" + types + "\n")
	for _, c := range cs {
		v := values[c.Name]
		if c.Type.String() == "bool" {
			fmt.Fprintf(&b, "static constexpr bool %s = %t;\n", c.Name, v != 0)
		} else {
			fmt.Fprintf(&b, "static constexpr uint %s = %du;\n", c.Name, v)
		}
	}
	b.WriteString(body + "\n")
	// A family that reads its buffers' bound lengths (bounds.h) reads them
	// from past the parameter struct in device memory, so its entries keep
	// a reference to it; the others copy the struct into registers once,
	// so that no field is read from memory again after a store (a store
	// through any pointer may alias the struct, for all the compiler
	// knows).
	byRef := strings.Contains(body, "bound_bytes(")
	for _, n := range names {
		bounded := es[n].Bounds[0] > 0
		if c := es[n].BoundsUnless; bounded && c != "" {
			lift, err := evalConstantExpr(c, values)
			if err != nil {
				return "", fmt.Errorf("gpu: %s: cuda_launch_bounds ... unless %s: %w", n, c, err)
			}
			bounded = lift == 0
		}
		writeCUDAEntry(&b, es[n], byRef, bounded)
	}
	return b.String(), nil
}

// writeCUDAEntry writes entry e's extern "C" function, with its
// __launch_bounds__ where bounded.
func writeCUDAEntry(b *strings.Builder, e *Entry, byRef, bounded bool) {
	var ps []string
	var pname, ptype string
	uses := map[string]bool{}
	for _, p := range e.Params {
		switch p.Kind {
		case Buffer:
			ps = append(ps, p.Type+" "+p.Name)
		case ParamStruct:
			pname, ptype = p.Name, strings.TrimSuffix(p.Type, "&")
		case Special:
			uses[p.Name] = true
		}
	}
	ps = append(ps, ptype+"* akunu_p")
	bounds := ""
	if bounded {
		bounds = fmt.Sprintf("__launch_bounds__(%d, %d) ", e.Bounds[0], e.Bounds[1])
	}
	fmt.Fprintf(b, "\nextern \"C\" __global__ void %s%s(%s) {\n", bounds, e.Name, strings.Join(ps, ", "))
	if uses["tgpig"] {
		b.WriteString("    uint3 tgpig;\n    tgpig.x = blockIdx.x;\n    tgpig.y = blockIdx.y;\n    tgpig.z = blockIdx.z;\n")
	}
	if uses["ntg"] {
		b.WriteString("    uint3 ntg;\n    ntg.x = blockDim.x;\n    ntg.y = blockDim.y;\n    ntg.z = blockDim.z;\n")
	}
	if uses["tid"] || uses["tpitg"] || uses["sg"] || uses["lane"] {
		b.WriteString("    const uint akunu_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n")
	}
	for _, n := range []string{"tid", "tpitg"} {
		if uses[n] {
			fmt.Fprintf(b, "    const uint %s = akunu_tid;\n", n)
		}
	}
	if uses["sg"] {
		b.WriteString("    const uint sg = akunu_tid / 32;\n")
	}
	if uses["lane"] {
		b.WriteString("    const uint lane = akunu_tid % 32;\n")
	}
	for _, p := range e.Params {
		if p.Kind == Threadgroup {
			b.WriteString("    extern __shared__ __attribute__((aligned(16))) uchar akunu_smem[];\n")
			fmt.Fprintf(b, "    %s %s = (%s)akunu_smem;\n", p.Type, p.Name, p.Type)
		}
	}
	if byRef {
		fmt.Fprintf(b, "    %s& %s = *akunu_p;\n", ptype, pname)
	} else {
		fmt.Fprintf(b, "    %s %s = *akunu_p;\n", ptype, pname)
	}
	b.WriteString("    grid_dependents();\n")
	if !e.Waits { // the body does not wait itself (Entry.Waits)
		b.WriteString("    grid_wait();\n")
	}
	fmt.Fprintf(b, "    %s(%s);\n}\n", e.Call, args(e))
}
