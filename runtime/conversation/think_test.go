package conversation

import (
	"strings"
	"testing"
)

// The split of a thinking model's answer is the same whatever pieces the
// text comes in, and no piece of either part ever holds a tag or a part of
// one.
func TestThinkSplitInEveryPieceing(t *testing.T) {
	for _, tc := range []struct {
		name, text         string
		inThink            bool
		reasoning, content string
	}{
		{"reasoning then the answer", "<think>\nLet me see. 2+2 is 4.\n</think>\n\nThe answer is 4.", false, "Let me see. 2+2 is 4.", "The answer is 4."},
		{"no reasoning at all", "Hello there, friend.", false, "", "Hello there, friend."},
		{"an empty think block", "<think>\n\n</think>\n\nHi.", false, "", "Hi."},
		{"a prompt that opened the think", "I should greet.</think>Hello!", true, "I should greet.", "Hello!"},
		{"a think tag later in the text is content", "Use <think> tags like this.", false, "", "Use <think> tags like this."},
		{"a lone angle bracket", "<b>bold</b> and a < sign", false, "", "<b>bold</b> and a < sign"},
		{"reasoning that never closes", "<think>I am still thinking", false, "I am still thinking", ""},
		{"inner spaces are kept", "<think>a  b\n\nc</think>x  y \n", false, "a  b\n\nc", "x  y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i <= len(tc.text); i++ {
				for j := i; j <= len(tc.text); j++ {
					th := newThinker(tc.inThink)
					var r, c strings.Builder
					for _, piece := range []string{tc.text[:i], tc.text[i:j], tc.text[j:]} {
						pr, pc := th.add(piece, false)
						for _, s := range []string{pr, pc} {
							if strings.Contains(s, "<think") && !strings.Contains(tc.content, "<think") || strings.Contains(s, "</think") {
								t.Fatalf("split %d/%d: a piece %q shows a tag", i, j, s)
							}
						}
						r.WriteString(pr)
						c.WriteString(pc)
					}
					pr, pc := th.add("", true)
					r.WriteString(pr)
					c.WriteString(pc)
					if r.String() != tc.reasoning || c.String() != tc.content {
						t.Fatalf("split %d/%d: reasoning %q, content %q; want %q, %q", i, j, r.String(), c.String(), tc.reasoning, tc.content)
					}
				}
			}
		})
	}
}

func TestOpensThink(t *testing.T) {
	for s, want := range map[string]bool{
		"<|im_start|>assistant\n":                         false,
		"<|im_start|>assistant\n<think>\n":                true,
		"<|im_start|>assistant\n<think>\n\n</think>\n\n":  false,
		"<think>old</think> user <|im_start|>assistant\n": false,
	} {
		if got := opensThink(s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
}
