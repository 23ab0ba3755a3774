package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/plans"
)

func init() {
	app.Register(cli.Command{
		Name: "embed",
		Summary: "print the embedding of each text (an embedding model's plan, or a decoder compiled with --pooling): " +
			"one L2-normalized vector a line, or --json; many inputs go through the model together",
		Usage: "PLAN [TEXT...] [-f FILE] [--json] [--threads N] [--backend B] [--model PATH]",
		Run:   runEmbed,
	})
}

// embedKVBudget bounds the KV cache an embedding load makes: each input of
// a replay takes a sequence slot of the plan's whole context.
const embedKVBudget = 1 << 30

// embedSeqs is the sequence slots to load an embedding plan with: as many
// as one replay packs inputs (the plan's max_seqs), within embedKVBudget.
func embedSeqs(p *plans.Plan) int {
	var slot uint64
	for _, b := range p.Buffers {
		if b.Kind == plans.BufKV {
			slot += b.Size
		}
	}
	n := int(p.Header.Target.Tuning.Seqs())
	if slot > 0 {
		n = min(n, int(embedKVBudget/slot))
	}
	return max(n, 1)
}

// embedding is one input's result, as --json prints it (the shape of an
// OpenAI embeddings response's data).
type embedding struct {
	Index     int       `json:"index"`
	Tokens    int       `json:"tokens"`
	Embedding []float32 `json:"embedding"`
}

func runEmbed(ctx *cli.Context, args []string) error {
	fs := ctx.Flags("embed")
	file := fs.String("f", "", "read the texts from FILE, one a line (empty lines skipped; - for standard input)")
	asJSON := fs.Bool("json", false, "print one JSON object: model, dim, data [{index, tokens, embedding}], usage")
	lf := addLoadFlags(fs)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := lf.check(); err != nil {
		return err
	}
	if len(pos) < 1 {
		return fmt.Errorf("%w: want a PLAN", cli.ErrUsage)
	}
	texts := pos[1:]
	if *file != "" {
		lines, err := readLines(ctx, *file)
		if err != nil {
			return err
		}
		texts = append(texts, lines...)
	}
	if len(texts) == 0 {
		return fmt.Errorf("%w: no text to embed: give TEXT arguments or -f FILE", cli.ErrUsage)
	}
	m, err := lf.loadFor(ctx, pos[0], embedSeqs)
	if err != nil {
		return err
	}
	defer closeModel(m)
	if !m.Embeds() {
		return fmt.Errorf("%s has no embedding program: compile an embedding model (bert), or a decoder with akunuc compile --pooling mean|cls|last", pos[0])
	}
	inputs := make([][]int32, len(texts))
	tokens := 0
	for i, t := range texts {
		inputs[i] = m.Tokenizer.Tokenize(t, true, false)
		tokens += len(inputs[i])
	}
	c, stop := interruptible()
	defer stop()
	start := time.Now()
	vecs, err := m.Embed(c, inputs)
	if err != nil {
		return err
	}
	took := time.Since(start)
	w := bufio.NewWriter(ctx.Stdout)
	defer w.Flush()
	if *asJSON {
		out := struct {
			Model string      `json:"model"`
			Dim   int         `json:"dim"`
			Data  []embedding `json:"data"`
			Usage struct {
				Tokens int     `json:"tokens"`
				MS     float64 `json:"ms"`
			} `json:"usage"`
		}{Model: m.Plan.Header.Model.File, Dim: m.EmbeddingDim()}
		for i, v := range vecs {
			out.Data = append(out.Data, embedding{Index: i, Tokens: len(inputs[i]), Embedding: v})
		}
		out.Usage.Tokens, out.Usage.MS = tokens, float64(took.Microseconds())/1000
		enc := json.NewEncoder(w)
		return enc.Encode(out)
	}
	buf := make([]byte, 0, 16*m.EmbeddingDim())
	for _, v := range vecs {
		buf = buf[:0]
		for j, x := range v {
			if j > 0 {
				buf = append(buf, ' ')
			}
			buf = strconv.AppendFloat(buf, float64(x), 'g', 7, 32)
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	fmt.Fprintf(ctx.Stderr, "akunu: %d inputs, %d tokens, %d dimensions, in %s (%.1f inputs/s)\n",
		len(vecs), tokens, m.EmbeddingDim(), took.Round(time.Microsecond), float64(len(vecs))/took.Seconds())
	return nil
}

// readLines reads the non-empty lines of path ("-": standard input).
func readLines(ctx *cli.Context, path string) ([]string, error) {
	var r io.Reader = ctx.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		if line := strings.TrimRight(sc.Text(), "\r"); strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}
