// Package specs is the architecture spec language: the YAML schema of the
// files in archs/, the small expression and layer-program language embedded
// in them (parsed with participle), their checking, with every error at
// file:line:col, and their resolution against a model.
//
// The flow is
//
//	reg, _ := specs.Builtin()                 // load and check archs/*.yaml
//	arch, _ := reg.ForArchitecture("llama")   // general.architecture → spec
//	hp, _ := arch.Resolve(md)                 // metadata → HParams
//	ts, _ := arch.Tensors(hp)                 // the tensors the model must have
//	prog, _ := arch.Program(hp)               // the forward pass as plain data
//
// and, for synthesis, the reverse: arch.HParamKeys and arch.MetadataFor
// turn chosen hyperparameters into metadata.
//
// The package knows no architecture by name: all model knowledge is in the
// specs, and a test holds every Go file of the repository to that. It reads
// no files but the specs (Metadata is an interface a GGUF reader is adapted
// to), and it must not import the compiler, the kernels or the runtime.
// docs/specs.md is the language reference; docs/adr/0002-spec-language.md
// says why it looks the way it does.
package specs
