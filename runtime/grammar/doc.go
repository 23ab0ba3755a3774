// Package grammar constrains generation to a formal language: llama.cpp's
// GBNF dialect, parsed into a Grammar (rules of alternatives of elements),
// compiled into a byte-level pushdown machine, and matched against a
// vocabulary so that each decode step gets a mask of the tokens that keep
// the output inside the language.
//
// The pieces, in the order data flows through them:
//
//   - Parse reads GBNF text into a Grammar (ir.go): literals become
//     sequences of code-point classes, groups and repetitions become rules
//     of their own, and every error carries its line and column. Undefined,
//     left-recursive and unreachable rules are reported, never hung on.
//   - Compile lowers a Grammar to a Machine: code-point classes become
//     UTF-8 byte sequences, and a state (a set of parse stacks) is interned
//     as a small integer, so that stepping a state by a byte is a table
//     lookup once seen.
//   - A Vocab holds the vocabulary's token bytes as a trie; a Matcher walks
//     it from the current state to fill a bitmask of allowed tokens, which
//     a CPU sampler applies to host logits and a GPU sampler would read as
//     a buffer.
//
// The JSON-schema converter (package jsonschema) produces GBNF for this
// package to parse.
package grammar
