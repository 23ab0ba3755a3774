// Package llamacpp drives llama.cpp's prebuilt CPU libraries through purego
// (no cgo), so that tests across the project can hold our code to llama.cpp:
// type sizes, dequantization and reference quantization from ggml; model
// loading, tokenization and logits from libllama.
//
// It is a test oracle, not a runtime: nothing outside tests should import it.
// The libraries come from scripts/fetch-llama.sh (make llama), which installs
// node-llama-cpp's per-platform npm package into <repo>/.cache/llama;
// AKUNU_LLAMA_LIB names another library directory. llama.cpp's log is
// dropped unless AKUNU_LLAMA_LOG=1, except that LoadModelInfo captures the
// log of one load to read the hyperparameters the API does not expose.
//
// A Model may be shared; a Context may not be used by two goroutines at once
// (llama.cpp's contexts are not thread-safe).
package llamacpp
