package chat_test

import (
	"fmt"

	"github.com/akunu-dev/akunu/runtime/chat"
)

func Example() {
	// A model's tokenizer.chat_template, or "" when its GGUF has none.
	src := `{%- for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}
{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`
	tmpl, err := chat.Select(src, "chatml")
	if err != nil {
		panic(err)
	}
	out, err := tmpl.Render(chat.Context{
		Messages:            []chat.Message{{Role: "user", Content: " Hi! "}},
		AddGenerationPrompt: true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", out)
	// Output: "<|user|>Hi!\n<|assistant|>"
}

func ExampleRaisedMessage() {
	tmpl, _ := chat.Builtin("gemma")
	_, err := tmpl.Render(chat.Context{Messages: []chat.Message{{Role: "user"}, {Role: "user"}}})
	if msg, ok := chat.RaisedMessage(err); ok {
		fmt.Println("the template refused:", msg)
	}
	fmt.Println(err)
	// Output:
	// the template refused: Conversation roles must alternate user/assistant/user/assistant/...
	// builtin:gemma:11:9: Conversation roles must alternate user/assistant/user/assistant/...
}
