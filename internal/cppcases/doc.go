// Package cppcases reads test cases out of C++ source as data: how the
// tests read llama.cpp's own grammar and JSON-schema tests from its pinned
// source at test time (nothing of llama.cpp is copied into the repo). It
// is a small C++ tokenizer (comments, string and character literals with
// their escapes, raw strings, adjacent-literal concatenation), a reader of
// the arguments of the calls to a named function (strings folded through
// +, token(N) and the function's string variables; brace lists), and the
// top-level function bodies of a file.
package cppcases
