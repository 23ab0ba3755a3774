package archs

import "embed"

// FS holds every spec file, at its root (llama.yaml, gemma3.yaml, ...).
//
//go:embed *.yaml
var FS embed.FS
