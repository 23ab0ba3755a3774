// Package chips owns the hardware the compiler targets: the chip profiles
// (the YAML files in this directory, embedded), the names by which a user
// picks one (m4-pro-20, m4-pro, cpu-avx2:16, auto), the detection of the
// machine the compiler runs on, and the rules that derive a plan's tuning
// values from a profile.
//
// A profile is facts about a chip (cores, GPU family, bandwidth, cache);
// tuning is policy (fuse weights, GEMV and attention variants, chunk sizes).
// The facts live in YAML, the policy lives in one table in rules.go, so that
// a reviewer can read every tuning decision in one place and a new chip is
// one YAML entry.
//
// The package knows no models, kernels or plans: it must not import the
// compiler, the kernel catalog or the spec language.
// docs/chips.md is the user's guide; docs/adr/0003-chip-tuning.md says why.
package chips
