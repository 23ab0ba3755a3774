// Package kernels is the kernel catalog: the contract between the compiler,
// which emits commands, and the backends, which run them. For every kernel a
// plan may name it holds the name, the buffer bindings, the parameter struct
// (with the byte offsets of the fields patched per token), the function
// constants, the geometry rule that sizes a command from its shape and the
// chip's tuning, and which backends implement it.
//
// It owns the naming convention (Spec.Name: the only code that spells a
// kernel's name) and the parameter structs, from which metal/ShaderTypes.h
// is generated. It must not know plans, models or architectures, and holds
// no kernel code: implementations live in the backends (kernels/metal for
// MSL, kernels/cpu, later kernels/cuda), which register what they implement.
//
// docs/kernels.md is the guide: the convention, each family's contract, and
// how a backend registers.
package kernels

//go:generate go run ./internal/gen -o gpu/ShaderTypes.h -metal metal
