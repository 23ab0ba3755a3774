// Package sampling is the one implementation of akunu's sampler: top-k,
// top-p and min-p candidates, temperature, and Gumbel-max noise from a
// counter-based stream (seed, position, token id). The CPU backend's
// gumbel_topk kernel runs it over the device's logits (Apply); the
// runtime runs it on the host where a token must be chosen there (Draw):
// the first token after a prompt, and every token a logits processor has
// touched. Draw returns exactly the token argmax picks after Apply, so the
// two paths sample the same text for a seed. The GPU kernels follow the
// math written out in Apply's comment.
//
// It must not allocate per call: a Sampler holds its candidate arrays,
// sized once for the vocabulary.
package sampling
