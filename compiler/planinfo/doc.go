// Package planinfo describes a compiled plan for people and scripts: what
// `akunuc inspect PLAN` prints — the target and its tuning, memory by kind
// and whether it fits the chip's Metal working set, every program command by
// command, the bytes read per decoded token and the roofline estimate of
// decode speed that follows from the chip's bandwidth.
//
// It reads plans only (package plans) and the chip catalog for memory sizes;
// it computes nothing the runtime depends on. The JSON form is stable
// (docs/inspect.md): fields are added, never renamed or removed.
package planinfo
