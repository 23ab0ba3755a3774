// Package conversation is a chat with a model, one turn at a time: the
// messages rendered through the model's chat template, the BOS rule, only
// what the session's KV cache lacks fed (the longest common prefix of the
// rendered conversation and the cache is kept), the answer streamed as it
// is decoded, end-of-turn tokens left out, and for models that think, the
// text between <think> and </think> split out as reasoning. akunu chat
// and the server are thin users of it.
//
// It owns the turn, not the model: the session, the template and the
// generation options come from the caller.
package conversation
