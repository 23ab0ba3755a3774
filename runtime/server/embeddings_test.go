package server

// POST /v1/embeddings over real HTTP: every form of input, both encodings,
// usage, the vectors held to Model.Embed's for the same tokens, every
// refusal with its status and field; then the engine's promises: an
// embedding request beside a streaming generation of the same model runs
// between its steps and changes none of its tokens, a request whose client
// went away is dropped, a model whose every slot generates embeds in the
// slots its idle generations lend.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler"
	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/compiler/synth"
	"github.com/akunu-dev/akunu/plans"
	rt "github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/specs"
	"github.com/akunu-dev/akunu/specs/chips"
)

// embedCompiled are the embedding test plans, compiled once per test
// binary into a directory TestMain removes: a small random BERT (the
// built-in vocabulary; an embedding model only) and stories260K compiled
// with mean pooling (a decoder that generates and embeds).
var embedCompiled struct {
	once                 sync.Once
	dir                  string
	bert, bertGGUF, pool string
	err                  string
}

// Model ids of the embedding tests' plans.
const (
	bertID   = "bert"
	pooledID = "stories-pooled"
)

// embedPlans compiles the embedding test plans at the first call.
func embedPlans(t testing.TB) (bert, bertGGUF, pooled string) {
	t.Helper()
	stories := storiesGGUF(t)
	embedCompiled.once.Do(func() {
		fail := func(err error) { embedCompiled.err = err.Error() }
		dir, err := os.MkdirTemp("", "akunu-server-embed")
		if err != nil {
			fail(err)
			return
		}
		embedCompiled.dir = dir
		reg, err := specs.Builtin()
		if err != nil {
			fail(err)
			return
		}
		o := synth.Options{Arch: "bert", Dim: 64, Layers: 1, Heads: 2, FFN: 128, CtxTrain: 128, DType: dtype.F16, Seed: 3}
		sp, err := synth.Build(reg, o)
		if err != nil {
			fail(err)
			return
		}
		gguf := filepath.Join(dir, "bert.gguf")
		if err := sp.Write(gguf, o.Seed); err != nil {
			fail(err)
			return
		}
		prof, err := chips.Resolve(testChip, 0)
		if err != nil {
			fail(err)
			return
		}
		for _, c := range []struct {
			gguf, out string
			pooling   int
		}{{gguf, bertID, 0}, {stories, pooledID, compiler.PoolMean}} {
			p, err := compiler.Compile(c.gguf, compiler.Options{Chip: prof, Pooling: c.pooling})
			if err != nil {
				fail(fmt.Errorf("compile %s: %w", c.gguf, err))
				return
			}
			if err := plans.WriteFile(filepath.Join(dir, c.out+".plan"), p); err != nil {
				fail(err)
				return
			}
		}
		embedCompiled.bert, embedCompiled.bertGGUF = filepath.Join(dir, bertID+".plan"), gguf
		embedCompiled.pool = filepath.Join(dir, pooledID+".plan")
	})
	if embedCompiled.err != "" {
		t.Fatal(embedCompiled.err)
	}
	return embedCompiled.bert, embedCompiled.bertGGUF, embedCompiled.pool
}

// BERTPlan is the synthetic BERT's plan and GGUF file, for the conformance
// test (package server_test).
func BERTPlan(t testing.TB) (plan, gguf string) {
	plan, gguf, _ = embedPlans(t)
	return plan, gguf
}

// withEmbedders adds the BERT and the pooled stories260K to cfg's plans
// (stories260K alone when it names none).
func withEmbedders(t testing.TB, cfg Config) Config {
	t.Helper()
	bert, bertGGUF, pooled := embedPlans(t)
	if len(cfg.Plans) == 0 {
		plan, gguf := storiesPlan(t)
		cfg.Plans, cfg.Models = []string{plan}, map[string]string{plan: gguf}
	}
	cfg.Plans = append(cfg.Plans, bert, pooled)
	cfg.Models[bert], cfg.Models[pooled] = bertGGUF, storiesGGUF(t)
	return cfg
}

// refModel loads model id's plan as the server would, its own CPU
// backend: the reference for the vectors.
func refModel(t testing.TB, id string) *rt.Model {
	t.Helper()
	bert, bertGGUF, pooled := embedPlans(t)
	plan, gguf := bert, bertGGUF
	if id == pooledID {
		plan, gguf = pooled, storiesGGUF(t)
	}
	p, err := plans.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	parallel := 0
	if id == pooledID {
		parallel = 2
	}
	m, err := rt.New(p, rt.Options{Model: gguf, Seqs: seqsOf(p, parallel, true), Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if parallel > 0 {
		// The server's generation sessions hold the first slots.
		for range parallel {
			s, err := m.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
		}
	}
	return m
}

// refEmbed is m's vectors for texts, tokenized as the server does.
func refEmbed(t testing.TB, m *rt.Model, texts ...string) (vecs [][]float32, tokens int) {
	t.Helper()
	inputs := make([][]int32, len(texts))
	for i, s := range texts {
		inputs[i] = m.Tokenizer.Tokenize(s, true, false)
		tokens += len(inputs[i])
	}
	vecs, err := m.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	return vecs, tokens
}

// embedResp is an embeddings response, its vectors decoded from either
// encoding.
type embedResp struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	vecs [][]float32
}

// tryEmbed posts an embedding request; the decoded 200 response or why
// not.
func (ts *testServer) tryEmbed(ctx context.Context, req map[string]any) (*embedResp, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/embeddings", strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := ts.client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out embedResp
	dec := json.NewDecoder(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e errBody
		dec.Decode(&e)
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, e.Error.Message)
	}
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	for i, d := range out.Data {
		if d.Index != i || d.Object != "embedding" {
			return nil, fmt.Errorf("data[%d]: index %d, object %q", i, d.Index, d.Object)
		}
		var v []float32
		var s string
		switch {
		case json.Unmarshal(d.Embedding, &v) == nil:
		case json.Unmarshal(d.Embedding, &s) == nil:
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				return nil, fmt.Errorf("data[%d]: %d bytes of base64: %v", i, len(raw), err)
			}
			v = make([]float32, len(raw)/4)
			for k := range v {
				v[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
			}
		default:
			return nil, fmt.Errorf("data[%d].embedding: neither numbers nor base64: %.40s", i, d.Embedding)
		}
		out.vecs = append(out.vecs, v)
	}
	return &out, nil
}

func (ts *testServer) embed(t testing.TB, req map[string]any) *embedResp {
	t.Helper()
	out, err := ts.tryEmbed(context.Background(), req)
	if err != nil {
		t.Fatalf("POST /v1/embeddings %v: %v", req, err)
	}
	return out
}

// sameVecs holds got to want: as many, of one length, each a unit vector
// within tol of want's element by element.
func sameVecs(t testing.TB, what string, got, want [][]float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d vectors, want %d", what, len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s[%d]: %d dimensions, want %d", what, i, len(got[i]), len(want[i]))
		}
		var norm, worst float64
		for k, x := range got[i] {
			norm += float64(x) * float64(x)
			worst = max(worst, math.Abs(float64(x)-float64(want[i][k])))
		}
		if math.Abs(math.Sqrt(norm)-1) > 1e-4 {
			t.Errorf("%s[%d]: norm %v, want 1", what, i, math.Sqrt(norm))
		}
		if worst > tol {
			t.Errorf("%s[%d]: differs by up to %g (cosine %v), want within %g", what, i, worst, rt.Cosine(got[i], want[i]), tol)
		}
	}
}

// embedTexts are short texts of different lengths.
var embedTexts = []string{"hello world", "a second, longer text about embeddings", "x"}

func TestEmbeddings(t *testing.T) {
	ts := startServer(t, withEmbedders(t, Config{Parallel: 2}))
	for _, id := range []string{bertID, pooledID} {
		ref := refModel(t, id)
		want, tokens := refEmbed(t, ref, embedTexts...)
		t.Run(id+": a string is one unit vector, Model.Embed's", func(t *testing.T) {
			r := ts.embed(t, map[string]any{"model": id, "input": embedTexts[0]})
			if r.Object != "list" || r.Model != id {
				t.Errorf("object %q, model %q; want list, %s", r.Object, r.Model, id)
			}
			sameVecs(t, "data", r.vecs, want[:1], 1e-6)
		})
		t.Run(id+": an array of strings is a vector each, in order; usage counts every token", func(t *testing.T) {
			r := ts.embed(t, map[string]any{"model": id, "input": embedTexts})
			sameVecs(t, "data", r.vecs, want, 1e-6)
			if r.Usage.PromptTokens != tokens || r.Usage.TotalTokens != tokens {
				t.Errorf("usage %+v, want %d prompt and total tokens", r.Usage, tokens)
			}
		})
		t.Run(id+": token ids embed as the text they tokenize to", func(t *testing.T) {
			ids := ref.Tokenizer.Tokenize(embedTexts[1], true, false)
			r := ts.embed(t, map[string]any{"model": id, "input": ids})
			sameVecs(t, "data", r.vecs, want[1:2], 1e-6)
			var all [][]int32
			for _, s := range embedTexts {
				all = append(all, ref.Tokenizer.Tokenize(s, true, false))
			}
			r = ts.embed(t, map[string]any{"model": id, "input": all})
			sameVecs(t, "data", r.vecs, want, 1e-6)
			if r.Usage.PromptTokens != tokens {
				t.Errorf("usage %+v, want %d prompt tokens", r.Usage, tokens)
			}
		})
		t.Run(id+": base64 decodes to the float vectors bit for bit", func(t *testing.T) {
			dim := ref.EmbeddingDim()
			f := ts.embed(t, map[string]any{"model": id, "input": embedTexts, "encoding_format": "float", "dimensions": dim})
			_, b := ts.post(t, "/v1/embeddings", map[string]any{"model": id, "input": embedTexts, "encoding_format": "base64"})
			if !strings.Contains(string(b), `"embedding":"`) {
				t.Fatalf("base64: the embedding is not a string: %.200s", b)
			}
			b64 := ts.embed(t, map[string]any{"model": id, "input": embedTexts, "encoding_format": "base64"})
			sameVecs(t, "base64", b64.vecs, f.vecs, 0)
		})
	}
	t.Run("the /embeddings alias answers", func(t *testing.T) {
		var r embedResp
		ts.postOK(t, "/embeddings", map[string]any{"model": bertID, "input": "hi"}, &r)
		if len(r.Data) != 1 {
			t.Errorf("%d vectors, want 1", len(r.Data))
		}
	})
	t.Run("/v1/models says which models embed, as the loaded model does", func(t *testing.T) {
		var out struct {
			Data []modelObject `json:"data"`
		}
		_, b := ts.get(t, "/v1/models")
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		got := map[string]modelMeta{}
		for _, d := range out.Data {
			got[d.ID] = d.Meta
		}
		for id, want := range map[string]struct{ gen, emb bool }{"stories260K": {true, false}, bertID: {false, true}, pooledID: {true, true}} {
			m := got[id]
			if !m.Loaded || m.Generates != want.gen || m.Embeddings != want.emb {
				t.Errorf("%s: loaded %v, generates %v, embeddings %v; want true, %v, %v", id, m.Loaded, m.Generates, m.Embeddings, want.gen, want.emb)
			}
			if !want.emb {
				continue
			}
			ref := refModel(t, id)
			if m.EmbeddingDim != ref.EmbeddingDim() || m.MaxEmbedTokens != ref.MaxEmbedTokens() {
				t.Errorf("%s: embedding_dim %d, max_embedding_tokens %d; the model says %d, %d", id, m.EmbeddingDim, m.MaxEmbedTokens, ref.EmbeddingDim(), ref.MaxEmbedTokens())
			}
		}
		if got[bertID].Slots != 0 || got[pooledID].Slots != 2 {
			t.Errorf("slots: bert %d, pooled %d; want 0 and 2 (generation slots)", got[bertID].Slots, got[pooledID].Slots)
		}
	})
	t.Run("the metrics count embedding requests, inputs and tokens", func(t *testing.T) {
		var before metricsEmbed
		for _, m := range ts.embedMetrics(t) {
			if m.ID == bertID {
				before = m
			}
		}
		r := ts.embed(t, map[string]any{"model": bertID, "input": embedTexts})
		var after metricsEmbed
		for _, m := range ts.embedMetrics(t) {
			if m.ID == bertID {
				after = m
			}
		}
		if after.Requests != before.Requests+1 || after.Inputs != before.Inputs+3 || after.Tokens != before.Tokens+uint64(r.Usage.PromptTokens) {
			t.Errorf("embedding metrics went from %+v to %+v: want 1 request, 3 inputs and %d tokens more", before, after, r.Usage.PromptTokens)
		}
		_, b := ts.get(t, "/metrics")
		if !strings.Contains(string(b), `akunu_embedding_requests_total{model="bert"}`) {
			t.Errorf("/metrics has no akunu_embedding_requests_total for bert")
		}
	})
}

// metricsEmbed is a model's embedding counters in /v1/metrics.
type metricsEmbed struct {
	ID       string `json:"id"`
	Requests uint64 `json:"embedding_requests"`
	Inputs   uint64 `json:"embedding_inputs"`
	Tokens   uint64 `json:"embedding_tokens"`
}

func (ts *testServer) embedMetrics(t testing.TB) []metricsEmbed {
	t.Helper()
	_, b := ts.get(t, "/v1/metrics")
	var out struct {
		Models []metricsEmbed `json:"models"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Models
}

func TestEmbeddingErrors(t *testing.T) {
	ts := startServer(t, withEmbedders(t, Config{Parallel: 2}))
	ref := refModel(t, bertID)
	vocab := ref.Vocab()
	long := strings.Repeat("hello world ", 100) // more than the BERT's 128 tokens
	chat := map[string]any{"model": bertID, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	for _, tc := range []struct {
		name        string
		path        string
		body        any
		param, code string
		msg         string // a piece the message holds
	}{
		{"no input names input", "/v1/embeddings", map[string]any{"model": bertID}, "input", "", "required"},
		{"an empty string names input", "/v1/embeddings", map[string]any{"model": bertID, "input": ""}, "input", "", "empty string"},
		{"an empty array names input", "/v1/embeddings", map[string]any{"model": bertID, "input": []string{}}, "input", "", "empty array"},
		{"an empty string in an array names it", "/v1/embeddings", map[string]any{"model": bertID, "input": []string{"a", ""}}, "input", "", "input[1]"},
		{"an empty array of token ids names it", "/v1/embeddings", map[string]any{"model": bertID, "input": [][]int{{1}, {}}}, "input", "", "input[1]"},
		{"an object as input names input", "/v1/embeddings", map[string]any{"model": bertID, "input": map[string]any{"text": "a"}}, "input", "", "expected a string"},
		{"a mix of texts and numbers names the item", "/v1/embeddings", map[string]any{"model": bertID, "input": []any{"a", 3}}, "input", "", "input[1]"},
		{"a token id outside the vocabulary names input", "/v1/embeddings", map[string]any{"model": bertID, "input": []int{1, vocab}}, "input", "", fmt.Sprint(vocab)},
		{"a negative token id names input", "/v1/embeddings", map[string]any{"model": bertID, "input": [][]int{{1}, {-1}}}, "input", "", "input[1]"},
		{"an input past the context says its maximum context length", "/v1/embeddings", map[string]any{"model": bertID, "input": long}, "input", "context_length_exceeded", "maximum context length is 128 tokens"},
		{"a long input among others is named", "/v1/embeddings", map[string]any{"model": bertID, "input": []string{"a", long}}, "input", "context_length_exceeded", "input[1]"},
		{"other dimensions name dimensions", "/v1/embeddings", map[string]any{"model": bertID, "input": "a", "dimensions": 32}, "dimensions", "", "64 dimensions"},
		{"an unknown encoding_format names it", "/v1/embeddings", map[string]any{"model": bertID, "input": "a", "encoding_format": "hex"}, "encoding_format", "", "hex"},
		{"dimensions as a string names dimensions", "/v1/embeddings", map[string]any{"model": bertID, "input": "a", "dimensions": "64"}, "dimensions", "", "dimensions"},
		{"a model that does not embed names model", "/v1/embeddings", map[string]any{"model": "stories260K", "input": "a"}, "model", "", "does not embed"},
		{"chat with an embedding model names model", "/v1/chat/completions", chat, "model", "", "embedding model"},
		{"a completion with an embedding model names model", "/v1/completions", map[string]any{"model": bertID, "prompt": "a"}, "model", "", "embedding model"},
		{"a streamed chat with an embedding model names model", "/v1/chat/completions", map[string]any{"model": bertID, "stream": true, "messages": chat["messages"]}, "model", "", "embedding model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.post(t, tc.path, tc.body)
			e := wantError(t, resp, b, 400, tc.param, tc.code)
			if !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", e.Error.Message, tc.msg)
			}
			if e.Error.Type != typeInvalid {
				t.Errorf("type %q, want %s", e.Error.Type, typeInvalid)
			}
		})
	}
	t.Run("more than 2048 inputs name input", func(t *testing.T) {
		many := make([]string, maxEmbedInputs+1)
		for i := range many {
			many[i] = "a"
		}
		resp, b := ts.post(t, "/v1/embeddings", map[string]any{"model": bertID, "input": many})
		e := wantError(t, resp, b, 400, "input", "")
		if !strings.Contains(e.Error.Message, "2048") {
			t.Errorf("message %q does not say 2048", e.Error.Message)
		}
	})
	t.Run("an unknown model is a 404", func(t *testing.T) {
		resp, b := ts.post(t, "/v1/embeddings", map[string]any{"model": "text-embedding-3-small", "input": "a"})
		wantError(t, resp, b, 404, "model", "model_not_found")
	})
	t.Run("an input of exactly the maximum length embeds", func(t *testing.T) {
		ids := make([]int32, ref.MaxEmbedTokens())
		for i := range ids {
			ids[i] = int32(i % vocab)
		}
		r := ts.embed(t, map[string]any{"model": bertID, "input": ids})
		want, err := ref.Embed(context.Background(), [][]int32{ids})
		if err != nil {
			t.Fatal(err)
		}
		sameVecs(t, "data", r.vecs, want, 1e-6)
	})
}

// streamText reads a chat stream to its end: the content, and when the
// last chunk came.
func streamText(t testing.TB, s *stream) (string, time.Time) {
	t.Helper()
	var b strings.Builder
	for {
		data, err := s.next()
		if err != nil {
			t.Fatalf("the stream broke off: %v", err)
		}
		if data == "[DONE]" {
			return b.String(), time.Now()
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		b.WriteString(c.text())
	}
}

// An embedding request beside a streaming chat of the same model (and of
// another) is answered between its steps, before the chat ends, with the
// vectors it has alone; the chat's greedy text is the one it has alone.
func TestEmbeddingDuringStreamingChat(t *testing.T) {
	cfg := withEmbedders(t, Config{Parallel: 2})
	slow(&cfg, 2*time.Millisecond)
	ts := startServer(t, cfg)
	want := map[string][][]float32{}
	for _, id := range []string{bertID, pooledID} {
		want[id] = ts.embed(t, map[string]any{"model": id, "input": embedTexts}).vecs
	}
	req := chatBody("Once upon a time", map[string]any{"model": pooledID, "stream": true, "temperature": 0, "max_tokens": 150, "ignore_eos": true})
	alone, _ := streamText(t, ts.openStream(t, "/v1/chat/completions", req))

	s := ts.openStream(t, "/v1/chat/completions", req)
	defer s.close()
	if _, err := s.next(); err != nil { // the role chunk: the chat runs
		t.Fatal(err)
	}
	type result struct {
		id   string
		vecs [][]float32
		at   time.Time
		err  error
	}
	results := make(chan result, 6)
	for i := range 6 {
		id := []string{bertID, pooledID}[i%2]
		go func() {
			r, err := ts.tryEmbed(context.Background(), map[string]any{"model": id, "input": embedTexts})
			if err != nil {
				results <- result{id: id, err: err}
				return
			}
			results <- result{id, r.vecs, time.Now(), nil}
		}()
	}
	text, ended := streamText(t, s)
	before := 0
	for range 6 {
		r := <-results
		if r.err != nil {
			t.Errorf("%s: %v", r.id, r.err)
			continue
		}
		sameVecs(t, r.id, r.vecs, want[r.id], 1e-5)
		if r.at.Before(ended) {
			before++
		}
	}
	if text != alone {
		t.Errorf("the chat beside embeddings wrote\n%q\nalone it writes\n%q", text, alone)
	}
	if before == 0 {
		t.Errorf("no embedding request was answered while the chat streamed: they did not interleave")
	}
	t.Logf("%d of 6 embedding requests answered while the chat streamed", before)
}

// An embedding request whose client goes away while the engine is busy is
// dropped: the engine is idle again, nothing counted, and the next one is
// answered.
func TestCancelledEmbeddingIsDropped(t *testing.T) {
	cfg := withEmbedders(t, Config{Parallel: 2})
	delay := slow(&cfg, 0)
	ts := startServer(t, cfg)
	delay.Store(int64(200 * time.Millisecond))
	s := ts.openStream(t, "/v1/chat/completions", chatBody("Once", map[string]any{"model": pooledID, "stream": true, "max_tokens": 50, "ignore_eos": true}))
	if _, err := s.next(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := ts.tryEmbed(ctx, map[string]any{"model": pooledID, "input": embedTexts})
	cancel()
	if err == nil {
		t.Fatalf("the embedding request was answered within 50 ms of a 200 ms step")
	}
	s.close()
	delay.Store(0)
	eng := ts.srv.reg.find(pooledID).eng
	if !eventually(10*time.Second, func() bool { ok, _ := eng.idle(); return ok }) {
		q, run := eng.load()
		t.Fatalf("the engine is not idle after the clients left: %d queued, %d running", q, run)
	}
	for _, m := range ts.embedMetrics(t) {
		if m.ID == pooledID && m.Requests != 0 {
			t.Errorf("%d embedding requests counted, want 0 (the one was dropped)", m.Requests)
		}
	}
	r := ts.embed(t, map[string]any{"model": pooledID, "input": embedTexts})
	if len(r.vecs) != len(embedTexts) {
		t.Errorf("%d vectors, want %d", len(r.vecs), len(embedTexts))
	}
}

// A model whose every sequence slot generates (--parallel = max_seqs)
// embeds in the slots its idle generations lend, and generates as before
// afterwards and beside.
func TestEmbeddingInLentSlots(t *testing.T) {
	_, _, pooled := embedPlans(t)
	p, err := plans.ReadFile(pooled)
	if err != nil {
		t.Fatal(err)
	}
	p.Header.Target.Tuning.MaxSeqs = 2
	plan := filepath.Join(t.TempDir(), "tight.plan")
	if err := plans.WriteFile(plan, p); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Parallel: 2, Plans: []string{plan}, Models: map[string]string{plan: storiesGGUF(t)}}
	ts := startServer(t, cfg)
	e := ts.srv.reg.find("tight")
	if e.seqs != 2 {
		t.Fatalf("loaded with %d slots, want 2", e.seqs)
	}
	want := ts.embed(t, map[string]any{"model": "tight", "input": embedTexts}).vecs
	ref := refModel(t, pooledID)
	ref2, _ := refEmbed(t, ref, embedTexts...)
	sameVecs(t, "lent slots", want, ref2, 1e-5)
	req := chatBody("Once upon a time", map[string]any{"model": "tight", "stream": true, "temperature": 0, "max_tokens": 60})
	alone, _ := streamText(t, ts.openStream(t, "/v1/chat/completions", req))
	s := ts.openStream(t, "/v1/chat/completions", req)
	defer s.close()
	if _, err := s.next(); err != nil {
		t.Fatal(err)
	}
	r := ts.embed(t, map[string]any{"model": "tight", "input": embedTexts})
	sameVecs(t, "beside a chat", r.vecs, want, 1e-5)
	if text, _ := streamText(t, s); text != alone {
		t.Errorf("the chat beside an embedding wrote\n%q\nalone it writes\n%q", text, alone)
	}
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("Once upon a time", map[string]any{"model": "tight", "temperature": 0, "max_tokens": 60}), &out)
	if out.Choices[0].Message.Content != alone {
		t.Errorf("after the embeddings the chat wrote\n%q\nbefore\n%q", out.Choices[0].Message.Content, alone)
	}
}

// An embedding model in the registry: the generation flags do not hold it
// (--ctx beyond its context only bounds it, --parallel does not apply, a
// speculation for every plan passes it by), it loads with a sequence slot
// per input one replay packs, and an embedding request loads it on demand.
func TestEmbeddingModelInTheRegistry(t *testing.T) {
	bert, bertGGUF, _ := embedPlans(t)
	plan, gguf := storiesPlan(t)
	p, err := plans.ReadFile(bert)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		ctx      int
		maxEmbed int
	}{{"a --ctx beyond its context leaves it whole", 1024, 128}, {"a --ctx within its context bounds its inputs", 64, 64}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Plans: []string{plan, bert}, Models: map[string]string{plan: gguf, bert: bertGGUF}, Ctx: tc.ctx,
				Spec: map[string]Spec{"": {Mode: "ngram"}}}
			ts := startUnloaded(t, cfg)
			e := ts.srv.reg.find(bertID)
			if e.maxEmbed != tc.maxEmbed || e.parallel != 0 || e.seqs != int(p.Header.Target.Tuning.Seqs()) {
				t.Errorf("max input %d, parallel %d, slots %d; want %d, 0, %d", e.maxEmbed, e.parallel, e.seqs, tc.maxEmbed, p.Header.Target.Tuning.Seqs())
			}
			if want := memoryOf(p, e.seqs); e.memory != want {
				t.Errorf("memory %d, want %d (the KV cache once per slot)", e.memory, want)
			}
			if ts.loaded(t)[bertID] {
				t.Fatalf("loaded before any request")
			}
			ids := make([]int32, tc.maxEmbed)
			r := ts.embed(t, map[string]any{"model": bertID, "input": ids})
			if len(r.vecs) != 1 || !ts.loaded(t)[bertID] {
				t.Errorf("%d vectors, loaded %v; want 1, true", len(r.vecs), ts.loaded(t)[bertID])
			}
			resp, b := ts.post(t, "/v1/embeddings", map[string]any{"model": bertID, "input": append(ids, 1)})
			wantError(t, resp, b, 400, "input", "context_length_exceeded")
		})
	}
}
