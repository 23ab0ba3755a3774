// Package tokcli is the body of the tokenize and detokenize subcommands
// that akunuc (over a GGUF file) and akunu (over a plan) share: the same
// flags, the same input forms and the same output, whatever the tokenizer
// was built from.
package tokcli

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// TokenizeUsage is the synopsis after "PROG tokenize" for a file argument
// named what (MODEL.gguf, PLAN).
func TokenizeUsage(prog, what string) string {
	return what + " [--no-special] [TEXT ...]\n" +
		"       " + prog + " tokenize " + what + " [--no-special] --vectors FILE.inp"
}

// Tokenize runs `tokenize FILE [--no-special] [TEXT ... | --vectors FILE]`
// with the tokenizer load gives for FILE.
func Tokenize(ctx *cli.Context, fs *flag.FlagSet, args []string, load func(string) (*tokenizer.Tokenizer, error)) error {
	noSpecial := fs.Bool("no-special", false, "add no BOS/EOS and read special-token text as plain text")
	vectors := fs.String("vectors", "", "tokenize each input of a llama.cpp test-vector file (inputs separated by\n"+
		"\"\\n__ggml_vocab_test__\\n\") and print one line of ids per input, as its .out file has them")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want a model or plan file", cli.ErrUsage)
	}
	if *vectors != "" && len(pos) > 1 {
		return fmt.Errorf("%w: --vectors takes no TEXT", cli.ErrUsage)
	}
	tk, err := load(pos[0])
	if err != nil {
		return err
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
		b, err := io.ReadAll(ctx.Stdin)
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

// DetokenizeUsage is the synopsis after "PROG detokenize" for a file
// argument named what.
func DetokenizeUsage(what string) string {
	return what + " [--special] IDS...  (ids space or comma separated; none: read them from stdin)"
}

// Detokenize runs `detokenize FILE [--special] IDS...`: the text of the
// ids (given as arguments, space or comma separated, or on stdin). By
// default the BOS (EOS) that tokenize adds is dropped and other control
// tokens print as nothing, so tokenize | detokenize gives the text back:
// llama_detokenize with remove_special, except that llama.cpp keeps the
// space SentencePiece put before the first word. --special prints every
// token's text, <s> and all (llama.cpp's unparse_special).
func Detokenize(ctx *cli.Context, fs *flag.FlagSet, args []string, load func(string) (*tokenizer.Tokenizer, error)) error {
	special := fs.Bool("special", false, "print special tokens as their text (<s>, <|im_end|>, ...) and keep the BOS/EOS tokenize adds")
	fs.Bool("no-special", true, "special tokens print as nothing (the default; kept for scripts)")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want a model or plan file", cli.ErrUsage)
	}
	text := strings.Join(pos[1:], " ")
	if len(pos) == 1 {
		b, err := io.ReadAll(ctx.Stdin)
		if err != nil {
			return fmt.Errorf("reading ids from stdin: %w", err)
		}
		text = string(b)
	}
	tk, err := load(pos[0])
	if err != nil {
		return err
	}
	var ids []int32
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' || r == '[' || r == ']' }) {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 || int(n) >= tk.NumTokens() {
			return fmt.Errorf("%w: %q is not a token id of this vocabulary (0..%d)", cli.ErrUsage, f, tk.NumTokens()-1)
		}
		ids = append(ids, int32(n))
	}
	if !*special {
		ids = trimAdded(tk.Vocab(), ids)
	}
	_, err = fmt.Fprintln(ctx.Stdout, tk.Detokenize(ids, *special))
	return err
}

// trimAdded drops the BOS at the start and the EOS at the end where the
// vocabulary adds them (llama.cpp's remove_special): a SentencePiece
// vocabulary then strips the first word's space as it does for a text
// without BOS.
func trimAdded(v *tokenizer.Vocab, ids []int32) []int32 {
	if v.AddBOS && len(ids) > 0 && ids[0] == v.BOS {
		ids = ids[1:]
	}
	if v.AddEOS && len(ids) > 0 && ids[len(ids)-1] == v.EOS {
		ids = ids[:len(ids)-1]
	}
	return ids
}
