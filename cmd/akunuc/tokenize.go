package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func init() {
	register(command{
		name:    "tokenize",
		summary: "print the token ids of a text, as llama.cpp's tokenizer gives them",
		usage: "MODEL.gguf [--no-special] [TEXT ...]\n" +
			"       akunuc tokenize MODEL.gguf [--no-special] --vectors FILE.inp",
		run: runTokenize,
	})
}

// tokenizeStdin is where the text comes from when no TEXT is given.
var tokenizeStdin io.Reader = os.Stdin

func runTokenize(ctx *cli, args []string) error {
	c := commands["tokenize"]
	fs := newFlags(ctx, c)
	noSpecial := fs.Bool("no-special", false, "add no BOS/EOS and read special-token text as plain text")
	vectors := fs.String("vectors", "", "tokenize each input of a llama.cpp test-vector file (inputs separated by\n"+
		"\"\\n__ggml_vocab_test__\\n\") and print one line of ids per input, as its .out file has them")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want a model file", errUsage)
	}
	if *vectors != "" && len(pos) > 1 {
		return fmt.Errorf("%w: --vectors takes no TEXT", errUsage)
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	v, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	special := !*noSpecial
	w := bufio.NewWriter(ctx.Stdout)
	if *vectors != "" {
		data, err := os.ReadFile(*vectors)
		if err != nil {
			return err
		}
		for _, in := range tokenizer.SplitVectorInputs(string(data)) {
			fmt.Fprintln(w, tokenizer.FormatVectorLine(tk.Tokenize(in, special, special)))
		}
		return w.Flush()
	}
	var text string
	if len(pos) > 1 {
		text = strings.Join(pos[1:], " ")
	} else {
		b, err := io.ReadAll(tokenizeStdin)
		if err != nil {
			return fmt.Errorf("reading the text from stdin: %w", err)
		}
		text = string(b)
	}
	b := make([]byte, 0, 16)
	for i, id := range tk.Tokenize(text, special, special) {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(id), 10)
		w.Write(b)
		b = b[:0]
	}
	w.WriteByte('\n')
	return w.Flush()
}
