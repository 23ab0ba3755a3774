// Package archs holds the architecture specs, one YAML file per family, and
// embeds them so that the compiler carries them inside its binary.
//
// Adding an architecture is adding a YAML file here: the spec language is
// documented in docs/specs.md, and the specs package loads, checks and
// resolves these files. This package is data only: it must not import
// anything, and no Go code anywhere may branch on an architecture's name.
package archs
