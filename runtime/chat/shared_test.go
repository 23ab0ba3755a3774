package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The shared templates are real models' tokenizer.chat_template, with the
// text the reference Jinja engine (Hugging Face's settings) rendered for
// three conversations; see ../shared/templates/README.md.

// specialTokens are the bos/eos the README lists for each model, by the
// prefix of its file name.
var specialTokens = []struct{ prefix, bos, eos string }{
	{"Qwen-", "", "<|im_end|>"},
	{"meta-llama-Llama-3.1", "<|begin_of_text|>", "<|eot_id|>"},
	{"google-gemma-2", "<bos>", "<eos>"},
	{"microsoft-Phi-3.5", "<s>", "<|endoftext|>"},
	{"mistralai-Mistral-Nemo", "<s>", "</s>"},
}

// testNow is the clock the README fixes for strftime_now: 21 Nov 2026.
var testNow = time.Date(2026, time.November, 21, 10, 30, 0, 0, time.UTC)

func sharedTemplates(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	p := filepath.Join(filepath.Dir(dir), "shared", "templates")
	if _, err := os.Stat(filepath.Join(p, "conversations.json")); err != nil {
		t.Fatalf("the shared chat templates are missing (want them at %s): %v", p, err)
	}
	return p
}

type sharedConversation struct {
	AddGenerationPrompt bool `json:"add_generation_prompt"`
	Messages            []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func loadConversations(t testing.TB, dir string) map[string]sharedConversation {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	convs := map[string]sharedConversation{}
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	if len(convs) == 0 {
		t.Fatal("conversations.json holds no conversation")
	}
	return convs
}

func (c sharedConversation) context(bos, eos string) Context {
	ctx := Context{AddGenerationPrompt: c.AddGenerationPrompt, BOS: bos, EOS: eos, Now: testNow}
	for _, m := range c.Messages {
		ctx.Messages = append(ctx.Messages, Message{Role: m.Role, Content: m.Content})
	}
	return ctx
}

func TestSharedTemplatesRenderExactlyAsTheReference(t *testing.T) {
	dir := sharedTemplates(t)
	convs := loadConversations(t, dir)
	names := make([]string, 0, len(convs))
	for n := range convs {
		names = append(names, n)
	}
	sort.Strings(names)
	templates, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil || len(templates) == 0 {
		t.Fatalf("no templates in %s (%v)", dir, err)
	}
	used := map[string]bool{}
	for _, path := range templates {
		model := strings.TrimSuffix(filepath.Base(path), ".jinja")
		bos, eos, ok := tokensFor(model)
		if !ok {
			t.Errorf("%s: the README lists no bos/eos for this model", model)
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := Parse(string(src))
		if err != nil {
			t.Errorf("%s does not parse: %v", model, err)
			continue
		}
		for _, conv := range names {
			txt := filepath.Join(dir, model+"."+conv+".txt")
			errFile := filepath.Join(dir, model+"."+conv+".error")
			used[txt], used[errFile] = true, true
			t.Run(model+" renders "+conv+" as the reference does", func(t *testing.T) {
				got, rerr := tmpl.Render(convs[conv].context(bos, eos))
				if want, err := os.ReadFile(txt); err == nil {
					if rerr != nil {
						t.Fatalf("render failed: %v", rerr)
					}
					if got != string(want) {
						t.Fatalf("rendering differs\n got: %q\nwant: %q", got, want)
					}
					return
				}
				want, err := os.ReadFile(errFile)
				if err != nil {
					t.Fatalf("neither %s nor %s exists", filepath.Base(txt), filepath.Base(errFile))
				}
				msg, ok := RaisedMessage(rerr)
				if !ok {
					t.Fatalf("want the template to refuse with %q, got output %q and error %v", want, got, rerr)
				}
				if msg != strings.TrimRight(string(want), "\n") {
					t.Fatalf("refused with %q, want %q", msg, want)
				}
			})
		}
	}
	expected, _ := filepath.Glob(filepath.Join(dir, "*.*.*"))
	for _, f := range expected {
		if ext := filepath.Ext(f); (ext == ".txt" || ext == ".error") && !used[f] {
			t.Errorf("%s is checked by no test (an unknown conversation?)", filepath.Base(f))
		}
	}
}

func tokensFor(model string) (bos, eos string, ok bool) {
	for _, s := range specialTokens {
		if strings.HasPrefix(model, s.prefix) {
			return s.bos, s.eos, true
		}
	}
	return "", "", false
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
