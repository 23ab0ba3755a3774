// Package compiler turns a GGUF model's header, its architecture spec and a
// chip profile into a plan: the ahead-of-time dispatch table the runtime
// replays (plans/FORMAT.md).
//
// The compiler is a list of passes over plain data (passes.go): lower the
// spec's program into the graph IR (ir.go), apply the fusion and lowering
// rules (fusion.rules, rules.go, fusion.go), lay out the weights
// (layout.go), select kernels (select.go), plan the buffers (buffers.go)
// and emit the commands (emit.go). docs/compiler.md describes each pass,
// what it assumes and what it guarantees; ADR 0007 says why.
//
// It owns compiler/*.go and fusion.rules. It reads the GGUF header only,
// never a weight byte, and it must not touch compiler/gguf, compiler/dtype,
// compiler/synth or compiler/modelinfo, which it uses.
package compiler
