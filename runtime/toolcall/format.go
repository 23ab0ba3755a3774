package toolcall

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Format is how a model writes tool calls.
type Format uint8

const (
	// None: the template renders no tool calls; output is all content.
	None Format = iota
	// Hermes: <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>,
	// several in a row (Qwen2.5, Qwen3, Hermes 2 Pro).
	Hermes
	// Llama3: a bare {"name": N, "parameters": {...}} at the start of the
	// output, or after <|python_tag|> (Llama 3.1 and later).
	Llama3
	// Mistral: [TOOL_CALLS][{"name": N, "arguments": {...}}, ...]
	// (Mistral Nemo and its relatives); call ids are 9 alphanumerics.
	Mistral
)

var formatNames = [...]string{None: "none", Hermes: "hermes", Llama3: "llama3", Mistral: "mistral"} // akunu:not-arch: tool-call format names

// Formats lists the formats with calls, in the order FormatOf tries them.
var Formats = []Format{Hermes, Llama3, Mistral}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat reads a format's name (as a --tool-format flag gives it).
func ParseFormat(s string) (Format, error) {
	for f, n := range formatNames {
		if s == n {
			return Format(f), nil
		}
	}
	return None, fmt.Errorf("tool format %q: expected one of %s", s, strings.Join(formatNames[:], ", "))
}

// openTag is the text that opens a call region in content ("" for Llama3's
// bare object, which only the start of the output may hold).
func (f Format) openTag() string {
	switch f {
	case Hermes:
		return "<tool_call>"
	case Llama3:
		return "<|python_tag|>"
	case Mistral:
		return "[TOOL_CALLS]"
	}
	return ""
}

const hermesClose = "</tool_call>"

// Options are a parse's or a stream's knobs.
type Options struct {
	// Rand draws call ids; nil draws from the process's random source.
	// Tests seed one to get the same ids twice.
	Rand *rand.Rand
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newID is a call id in the format's style: 9 alphanumerics for Mistral
// (its template refuses any other), OpenAI's call_ and 24 more otherwise.
func newID(f Format, r *rand.Rand) string {
	n, prefix := 24, "call_"
	if f == Mistral {
		n, prefix = 9, ""
	}
	b := make([]byte, len(prefix)+n)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		var k int
		if r != nil {
			k = r.IntN(len(idChars))
		} else {
			k = rand.IntN(len(idChars))
		}
		b[i] = idChars[k]
	}
	return string(b)
}
