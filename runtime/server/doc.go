// Package server is akunu's OpenAI-compatible HTTP server: chat and text
// completions (streamed as server-sent events or whole), embeddings, models,
// tokenize/detokenize, health and metrics, over one or more loaded plans.
//
// Each loaded model has an engine: one goroutine that owns the model's
// sessions (its KV sequence slots, --parallel of them) and a
// runtime.Batcher, admits waiting requests to free slots at every step
// (continuous batching: a request joins at the next step, a finished one
// leaves), reuses the longest cached prefix of any slot, and steps the
// batch. The choice of which request goes to which slot, from which
// prefix, is schedule: a pure function a test drives request by request.
// Handlers talk to an engine only through a job and its event queue.
// Embedding requests are jobs too: the engine embeds them between its
// batched steps, a chunk (one packed replay) at a time, in the sequence
// slots no session holds, so that nothing else ever touches the model.
//
// It owns HTTP, the OpenAI wire format, the scheduler and the model
// registry; it must not know architectures, and it generates only through
// package runtime (the engine's library).
package server
