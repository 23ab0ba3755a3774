package chat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The built-ins render the shared conversations exactly as the real
// templates of their families do wherever the formats agree.
func TestBuiltinsMatchTheirFamilies(t *testing.T) {
	dir := sharedTemplates(t)
	convs := loadConversations(t, dir)
	cases := []struct {
		builtin, model, conv string
		bos, eos             string
	}{
		{"chatml", "Qwen-Qwen3-0.6B", "with-system", "", "<|im_end|>"},
		{"chatml", "Qwen-Qwen3-0.6B", "no-system", "", "<|im_end|>"},
		{"gemma", "google-gemma-2-2b-it", "no-system", "<bos>", "<eos>"},
		{"gemma", "google-gemma-2-2b-it", "single-turn-no-prompt", "<bos>", "<eos>"},
	}
	for _, c := range cases {
		t.Run(c.builtin+" renders "+c.conv+" as "+c.model+" does", func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(dir, c.model+"."+c.conv+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, ok := Builtin(c.builtin)
			if !ok {
				t.Fatalf("no built-in %q", c.builtin)
			}
			got, err := tmpl.Render(convs[c.conv].context(c.bos, c.eos))
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestBuiltinsRenderTheirFormats(t *testing.T) {
	conv := []Message{{Role: "system", Content: " Be brief. "}, {Role: "user", Content: "Hi "}, {Role: "assistant", Content: "Hello"}, {Role: "user", Content: "Bye"}}
	cases := []struct {
		name    string
		builtin string
		ctx     Context
		want    string
	}{
		{"llama3 opens with BOS and trims every turn", "llama3", Context{Messages: conv, BOS: "<|begin_of_text|>", AddGenerationPrompt: true},
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3 without a generation prompt ends after the last turn", "llama3", Context{Messages: conv[1:3], BOS: "<|begin_of_text|>"},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>"},
		{"gemma puts the system message atop the first user turn", "gemma", Context{Messages: conv, BOS: "<bos>", AddGenerationPrompt: true},
			"<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n" +
				"<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
		{"chatml keeps content as it is and adds no BOS", "chatml", Context{Messages: conv[:2], BOS: "<s>"},
			"<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\nHi <|im_end|>\n"},
		{"every built-in renders an empty conversation", "gemma", Context{BOS: "<bos>"}, "<bos>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, _ := Builtin(c.builtin)
			got, err := tmpl.Render(c.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("\n got %q\nwant %q", got, c.want)
			}
		})
	}
	t.Run("gemma refuses turns that do not alternate", func(t *testing.T) {
		tmpl, _ := Builtin("gemma")
		_, err := tmpl.Render(Context{Messages: []Message{{Role: "user"}, {Role: "user"}}})
		if msg, ok := RaisedMessage(err); !ok || msg != "Conversation roles must alternate user/assistant/user/assistant/..." {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the built-ins are listed", func(t *testing.T) {
		if got := BuiltinNames(); len(got) != 3 || got[0] != "chatml" || got[1] != "gemma" || got[2] != "llama3" {
			t.Fatalf("BuiltinNames() = %v", got)
		}
		if _, ok := Builtin("vicuna"); ok {
			t.Fatal("Builtin found a template that does not exist")
		}
	})
}

func TestSelectPrefersTheModelsTemplate(t *testing.T) {
	cases := []struct {
		name     string
		model    string
		hint     string
		wantName string
		wantErr  error
	}{
		{"the model's template wins over any hint", "{{ 'own' }}", "chatml", "tokenizer.chat_template", nil},
		{"without one, a built-in name is taken", "", "gemma", "builtin:gemma", nil},
		{"hints are case- and space-insensitive", "  \n", " ChatML ", "builtin:chatml", nil},
		{"a hint that names no built-in is an error", "", "vicuna", "", ErrNoTemplate},
		{"no template and no hint is an error", "", "", "", ErrNoTemplate},
		{"a broken model template is an error, not a fallback", "{% if %}", "chatml", "", ErrSyntax},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := Select(c.model, c.hint)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("got %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tmpl.Name() != c.wantName {
				t.Fatalf("picked %s, want %s", tmpl.Name(), c.wantName)
			}
		})
	}
}

func BenchmarkRenderQwen3FortyTurns(b *testing.B) {
	src := readShared(b, "Qwen-Qwen3-0.6B.jinja")
	tmpl, err := Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	ctx := Context{AddGenerationPrompt: true}
	for i := 0; i < 20; i++ {
		ctx.Messages = append(ctx.Messages, Message{Role: "user", Content: "What is the weather like today in Paris?"},
			Message{Role: "assistant", Content: "<think>\nThe user asks about weather.\n</think>\n\nSunny, 22C."})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
