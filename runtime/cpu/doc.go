// Package cpu is the CPU backend: every kernel of the catalog (kernels/) in
// Go, and the execution core that binds a plan's commands once at load and
// replays them with no lookups, no decoding and no allocation per token.
//
// It owns the kernels' CPU semantics (the "CPU twin" every other backend is
// held to) and a worker pool that splits rows, tiles and heads over the
// cores. It must not know about architectures, plans' programs or the replay
// loop's strategy: it runs commands, it does not choose them.
//
// docs/adr/0008-cpu-backend.md says why it is built this way.
package cpu
