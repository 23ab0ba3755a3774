package server

// Fuzz targets for every parser of a request's untrusted bytes: the body
// decoder and what reads a decoded chat, completion or embedding request
// (messages, content parts, tools, tool_choice, response_format, template
// kwargs, sampling knobs, stop strings, prompts as text or token ids,
// embedding inputs, encoding_format and dimensions). Whatever
// the bytes, nothing panics, and a refusal is an *apiError of a 4xx status
// that writes OpenAI's shape. scripts/fuzz.sh runs each for FUZZTIME.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/plans"
	rt "github.com/akunu-dev/akunu/runtime"
	"github.com/akunu-dev/akunu/runtime/chat"
)

// fuzzBodyLimit keeps every input cheap: a larger body is a 413.
const fuzzBodyLimit = 8 << 10

var chatSeeds = []string{
	`{"model":"stories260K","messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"stories260K","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"Tell me a story"}],"max_tokens":64,"temperature":0.7,"top_p":0.9,"seed":42,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":null}],"max_completion_tokens":10,"n":1}`,
	`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
	`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false}`,
	`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}],"tool_choice":"none"}`,
	`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`,
	`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`,
	`{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":false},"reasoning_content":"r"}`,
	`{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"messages":[]}}`,
	`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":5,"logit_bias":{"15":-100,"16":2.5},"stop":["\n","END"],"frequency_penalty":0.5,"presence_penalty":-0.5,"repeat_penalty":1.1,"repeat_last_n":64,"top_k":40,"min_p":0.05,"ignore_eos":true}`,
	`{"messages":[{"role":"user","content":"x"}],"temperature":"hot","max_tokens":"x"}`,
	`{"messages":"x"}`,
	`{"messages":[{"role":"wizard"}]}`,
	`{"messages":[],"stop":null,"seed":-1}`,
	`[1,2,3]`,
	`{"messages":[{"role":"user","content":"a"}]} {}`,
	`{"messages":[{"role":"user","content":"` + "\xff" + `"}]}`,
	`{"messages":[[[[[[[[[[`,
	``,
}

var completionSeeds = []string{
	`{"model":"stories260K","prompt":"Once upon a time","max_tokens":16}`,
	`{"prompt":[1,2,3,4],"max_tokens":4,"logprobs":2,"echo":true}`,
	`{"prompt":[[1,2,3]],"stream":true}`,
	`{"prompt":["one"],"stop":"\n","suffix":"","best_of":1}`,
	`{"prompt":["one","two"]}`,
	`{"prompt":[1,99999]}`,
	`{"prompt":[-1]}`,
	`{"prompt":""}`,
	`{"prompt":null}`,
	`{"prompt":{"text":"x"}}`,
	`{"prompt":"x","max_tokens":0}`,
	`{"prompt":"x","max_tokens":100000}`,
	`{"prompt":"x","temperature":2.5,"top_p":-1}`,
	`{"prompt":"x","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`,
	`{"prompt":"x","logit_bias":{"abc":1}}`,
	`{"prompt":"<s>x</s>","n":2}`,
}

// checkRefusal holds a refusal to the contract: a 4xx of OpenAI's shape.
func checkRefusal(t *testing.T, what string, aerr *apiError) {
	t.Helper()
	if aerr.Status < 400 || aerr.Status > 499 {
		t.Fatalf("%s: status %d: %s", what, aerr.Status, aerr.Message)
	}
	if aerr.Type != typeInvalid || aerr.Message == "" {
		t.Fatalf("%s: type %q, message %q", what, aerr.Type, aerr.Message)
	}
	w := httptest.NewRecorder()
	writeError(w, aerr)
	var b errBody
	if w.Code != aerr.Status || json.Unmarshal(w.Body.Bytes(), &b) != nil || b.Error.Message == "" {
		t.Fatalf("%s: wrote %d %q", what, w.Code, w.Body.String())
	}
}

// decodeFuzz decodes body as a request of v's shape, as a handler does.
func decodeFuzz(body []byte, v any) *apiError {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	return decodeBody(httptest.NewRecorder(), r, fuzzBodyLimit, v)
}

// checkOptions holds accepted sampling knobs to their bounds.
func checkOptions(t *testing.T, o rt.GenerateOptions, ctx, promptLen int) {
	t.Helper()
	s := o.Sampling
	switch {
	case o.MaxTokens < 1 || promptLen+o.MaxTokens > ctx:
		t.Fatalf("max tokens %d after a prompt of %d in a context of %d", o.MaxTokens, promptLen, ctx)
	case !(s.Temperature >= 0 && s.Temperature <= 2), !(s.TopP >= 0 && s.TopP <= 1), !(s.MinP >= 0 && s.MinP <= 1), s.TopK < 0:
		t.Fatalf("sampling out of bounds: %+v", s)
	case len(o.Stop) > maxStops:
		t.Fatalf("%d stop strings", len(o.Stop))
	}
	for _, st := range o.Stop {
		if st == "" || len(st) > maxStopLen {
			t.Fatalf("a stop string of %d bytes", len(st))
		}
	}
}

var chatml = sync.OnceValues(func() (*chat.Template, error) { return chat.Select("", "chatml") })

func FuzzChatRequest(f *testing.F) {
	for i, s := range chatSeeds {
		f.Add([]byte(s), i*37%2100)
	}
	tmpl, err := chatml()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, promptLen int) {
		var req chatRequest
		if aerr := decodeFuzz(body, &req); aerr != nil {
			checkRefusal(t, "decode", aerr)
			return
		}
		msgs, aerr := req.messages()
		if aerr != nil {
			checkRefusal(t, "messages", aerr)
			return
		}
		if len(msgs) != len(req.Messages) {
			t.Fatalf("%d messages of %d", len(msgs), len(req.Messages))
		}
		extra, aerr := req.templateExtra()
		if aerr != nil {
			checkRefusal(t, "templateExtra", aerr)
			return
		}
		// A template's refusal is the server's 400; it must not panic.
		_, _ = tmpl.Render(chat.Context{Messages: msgs, AddGenerationPrompt: true, Extra: extra})
		const ctx = 2048
		promptLen = min(max(promptLen, 0), 2*ctx)
		o, aerr := req.options(512, ctx, promptLen, "messages")
		if aerr != nil {
			checkRefusal(t, "options", aerr)
			return
		}
		checkOptions(t, o, ctx, promptLen)
	})
}

// fuzzEntry is a model entry of stories260K's tokenizer, for promptIDs.
var fuzzEntry struct {
	once sync.Once
	e    *entry
	err  error
}

func storiesEntry(f *testing.F) *entry { return storiesEntryT(f) }

func storiesEntryT(f testing.TB) *entry {
	plan, _ := storiesPlan(f)
	fuzzEntry.once.Do(func() {
		p, err := plans.ReadFile(plan)
		if err != nil {
			fuzzEntry.err = err
			return
		}
		tok, err := rt.Tokenizer(&p.Model.Tokenizer)
		if err != nil {
			fuzzEntry.err = err
			return
		}
		fuzzEntry.e = &entry{id: "stories260K", plan: p, tok: tok, ctx: int(p.Model.HParams.Ctx)}
	})
	if fuzzEntry.err != nil {
		f.Fatal(fuzzEntry.err)
	}
	return fuzzEntry.e
}

func FuzzCompletionRequest(f *testing.F) {
	for _, s := range completionSeeds {
		f.Add([]byte(s))
	}
	e := storiesEntry(f)
	vocab := int(e.plan.Model.HParams.Vocab)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req completionRequest
		if aerr := decodeFuzz(body, &req); aerr != nil {
			checkRefusal(t, "decode", aerr)
			return
		}
		ids, _, aerr := e.promptIDs(req.Prompt)
		if aerr != nil {
			checkRefusal(t, "promptIDs", aerr)
			return
		}
		for _, id := range ids {
			if id < 0 || int(id) >= vocab {
				t.Fatalf("token %d outside the vocabulary of %d", id, vocab)
			}
		}
		o, aerr := req.options(vocab, e.ctx, len(ids), "prompt")
		if aerr != nil {
			checkRefusal(t, "options", aerr)
			return
		}
		checkOptions(t, o, e.ctx, len(ids))
	})
}

var embeddingSeeds = []string{
	`{"model":"bert","input":"The food was delicious and the waiter was kind."}`,
	`{"input":["one","two","three"],"encoding_format":"float"}`,
	`{"input":[1,2,3],"encoding_format":"base64","dimensions":64,"user":"u"}`,
	`{"input":[[1,2],[3,4,5]]}`,
	`{"input":[[1,2],"mixed"]}`,
	`{"input":""}`,
	`{"input":[]}`,
	`{"input":[[]]}`,
	`{"input":[""]}`,
	`{"input":null}`,
	`{"input":{"text":"x"}}`,
	`{"input":[1.5]}`,
	`{"input":[-1]}`,
	`{"input":[99999999999]}`,
	`{"input":"x","dimensions":0}`,
	`{"input":"x","dimensions":"64"}`,
	`{"input":"x","encoding_format":"hex"}`,
	`{"input":[[[1]]]}`,
	`{"input":"` + strings.Repeat("word ", 300) + `"}`,
}

func FuzzEmbeddingRequest(f *testing.F) {
	for _, s := range embeddingSeeds {
		f.Add([]byte(s))
	}
	// stories260K's tokenizer and vocabulary, as an embedding model of 64
	// dimensions and inputs of at most 128 tokens.
	e := *storiesEntry(f)
	e.embeds, e.embedDim, e.maxEmbed = true, 64, 128
	vocab := int(e.plan.Model.HParams.Vocab)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req embeddingRequest
		if aerr := decodeFuzz(body, &req); aerr != nil {
			checkRefusal(t, "decode", aerr)
			return
		}
		inputs, aerr := e.embedInputs(req.Input)
		if aerr != nil {
			checkRefusal(t, "embedInputs", aerr)
			return
		}
		if len(inputs) == 0 || len(inputs) > maxEmbedInputs {
			t.Fatalf("%d inputs accepted", len(inputs))
		}
		if _, aerr := req.embedFormat(&e, inputs); aerr != nil {
			checkRefusal(t, "embedFormat", aerr)
			return
		}
		for i, in := range inputs {
			if len(in) == 0 || len(in) > e.maxEmbed {
				t.Fatalf("input %d of %d tokens accepted", i, len(in))
			}
			for _, id := range in {
				if id < 0 || int(id) >= vocab {
					t.Fatalf("input %d: token %d outside the vocabulary of %d", i, id, vocab)
				}
			}
		}
		if req.Dimensions != nil && *req.Dimensions != e.embedDim {
			t.Fatalf("dimensions %d accepted", *req.Dimensions)
		}
	})
}
