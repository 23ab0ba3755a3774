// Package runtime loads a compiled plan over its GGUF file and replays it:
// prefill in buckets, chain decode (many tokens per submission, the argmax
// of token i feeding token i+1 on the device), sampling, stop conditions and
// multi-turn sessions that continue from the KV cache.
//
// It owns the replay loop and the small Backend interface that loop needs;
// runtime/cpu (and later Metal, CUDA) implement the commands. It must not
// know architectures: everything model-specific is in the plan, and the
// loop is a switch over programs and patch steps, nothing else.
//
// docs/runtime.md describes the loop; docs/adr/0009-runtime.md says why.
package runtime
