package runtime

import (
	"strings"

	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// textStream turns a generation's tokens into text as they come, holding
// back only what could still become the start of a stop string: the text
// a caller streams never contains a stop string, nor a part of one that
// the next tokens turn into one.
type textStream struct {
	dec    *tokenizer.Decoder
	stops  []string
	held   string          // text not yet released: a possible start of a stop string
	out    strings.Builder // every released piece
	onText func(string) bool
}

func newTextStream(t *tokenizer.Tokenizer, stops []string, onText func(string) bool) *textStream {
	var keep []string
	for _, s := range stops {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return &textStream{dec: t.NewDecoder(false).Continuing(), stops: keep, onText: onText}
}

// add takes a token. It reports the stop string found (the text stops
// before it, and the rest is dropped) and whether the caller's OnText
// asked to stop.
func (t *textStream) add(id int32) (stop string, caller bool) {
	return t.push(t.dec.Add(id), false)
}

// flush releases what was held back: the generation ended another way.
func (t *textStream) flush() (stop string, caller bool) {
	return t.push(t.dec.Flush(), true)
}

func (t *textStream) push(piece string, final bool) (string, bool) {
	if piece == "" && !final {
		return "", false
	}
	text := t.held + piece
	t.held = ""
	cut, found := len(text), ""
	for _, s := range t.stops {
		if i := strings.Index(text, s); i >= 0 && i < cut {
			cut, found = i, s
		}
	}
	release := text[:cut]
	if found == "" && !final {
		// Hold the longest tail that begins some stop string.
		hold := 0
		for _, s := range t.stops {
			for k := min(len(s)-1, len(text)); k > hold; k-- {
				if strings.HasSuffix(text, s[:k]) {
					hold = k
					break
				}
			}
		}
		release, t.held = text[:len(text)-hold], text[len(text)-hold:]
	}
	if release == "" {
		return found, false
	}
	t.out.WriteString(release)
	if t.onText != nil && !t.onText(release) {
		return found, true
	}
	return found, false
}
