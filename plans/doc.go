// Package plans is the plan format: the file that akunuc writes and the
// runtime replays (DESIGN.md, "The plan").
//
// A plan is plain data indexed by small integers: buffers, pipelines and
// programs are flat slices, and a command names its pipeline and its buffers
// by index. The package owns
//
//   - the Go types (Plan and what it holds),
//   - the file encoding: a fixed preamble (magic, format version, minimum
//     runtime version, body length, SHA-256) followed by a msgpack body that
//     this package writes and reads field by field (wire.go, schema.go), so
//     the same Plan always encodes to the same bytes and hostile input is
//     bounded before anything is allocated,
//   - Validate, which checks every index, offset and count before a runtime
//     binds anything,
//   - Render, a stable text form for golden files and CI, and Diff, which
//     says what changed between two plans (across chips, across compiler
//     versions).
//
// It must not import the compiler, the kernel catalog or the runtime: a plan
// names kernels by string and carries their parameters as bytes, and both
// producers and consumers depend on this package, never the other way round.
// FORMAT.md documents the layout and the evolution policy;
// docs/adr/0004-plan-format.md says why it is built this way.
package plans
