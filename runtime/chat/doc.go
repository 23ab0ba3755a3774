// Package chat renders chat templates: the Jinja programs that models ship
// in tokenizer.chat_template to turn a list of messages into the exact prompt
// text they were trained on.
//
// It owns a sandboxed interpreter for the subset of Jinja that chat templates
// use, rendering the way Hugging Face does (trim_blocks, lstrip_blocks,
// loop controls, an immutable sandbox, tojson as json.dumps,
// raise_exception, strftime_now), the built-in templates for models that
// ship none (ChatML, Llama 3, Gemma), and the choice between the two
// (Select).
//
// It knows nothing of tokens, models or the runtime: it must not import them.
// Its input is text and plain values, its output text. Errors carry the
// template's line:col. docs/adr/0006-chat-templates.md says what is supported
// and why the interpreter is ours.
package chat
