package chat

import (
	"fmt"
	"sort"
	"strings"
)

// gemmaFormat is the name of the Gemma chat format (it is also the name of
// an architecture, which this package never branches on).
const gemmaFormat = "gemma" // akunu:not-arch: a chat format's name

// Built-in templates, for models whose GGUF has no tokenizer.chat_template.
// They are ours, written in the same Jinja subset and rendered by the same
// interpreter, so they are held to the same tests. Each renders only role and
// content; none knows tools. docs/adr/0006-chat-templates.md says why these
// three.
var builtins = map[string]string{
	// ChatML (Qwen, many fine-tunes): every turn is
	// <|im_start|>ROLE\nCONTENT<|im_end|>\n; no BOS, no default system turn.
	"chatml": `{%- for message in messages -%}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- endif -%}`,

	// Llama 3 Instruct: BOS, then per turn a header and the trimmed content
	// closed by <|eot_id|>. Llama 3.1's date preamble and tool prompts are
	// left out: a model that wants them ships its own template.
	"llama3": `{{- bos_token -}}
{%- for message in messages -%}
{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%}`,

	// Gemma (2 and 3): BOS, turns <start_of_turn>user|model ... <end_of_turn>,
	// strictly alternating from the user. Gemma has no system role; as Gemma
	// 3's own template does, a leading system message is put at the top of
	// the first user turn (Gemma 2's refuses it instead).
	gemmaFormat: `{{- bos_token -}}
{%- if messages and messages[0]['role'] == 'system' -%}
  {%- set prefix = messages[0]['content'] | trim + '\n\n' -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set prefix = '' -%}
  {%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
  {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
    {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') -}}
  {%- endif -%}
  {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
  {{- '<start_of_turn>' + role + '\n' + (prefix if loop.first else '') + message['content'] | trim + '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<start_of_turn>model\n' -}}
{%- endif -%}`,
}

// Builtin returns the built-in template called name ("chatml", "llama3",
// "gemma").
func Builtin(name string) (*Template, bool) {
	src, ok := builtins[name]
	if !ok {
		return nil, false
	}
	t, err := ParseNamed("builtin:"+name, src)
	if err != nil {
		panic(err) // the built-ins are tested; this cannot happen
	}
	return t, true
}

// BuiltinNames lists the built-in templates, sorted.
func BuiltinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Select picks the template to render a model's conversations with: the
// model's own (modelTemplate, its tokenizer.chat_template) when it has one;
// otherwise the built-in that hint names ("chatml"; the architecture spec's
// chat_template field says which one a family uses, so this package knows
// no architecture); otherwise ErrNoTemplate. A model
// template that does not parse is an error, not a reason to fall back: a
// wrong format would quietly degrade every answer.
func Select(modelTemplate, hint string) (*Template, error) {
	if strings.TrimSpace(modelTemplate) != "" {
		return Parse(modelTemplate)
	}
	h := strings.ToLower(strings.TrimSpace(hint))
	if t, ok := Builtin(h); ok {
		return t, nil
	}
	if hint == "" {
		return nil, fmt.Errorf("%w: the model has no tokenizer.chat_template; choose one of %s", ErrNoTemplate, strings.Join(BuiltinNames(), ", "))
	}
	return nil, fmt.Errorf("%w: the model has no tokenizer.chat_template and %q names no built-in (have %s)", ErrNoTemplate, hint, strings.Join(BuiltinNames(), ", "))
}
