package chat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A chat template comes with a downloaded model: it is untrusted input. These
// templates try to hang the renderer or exhaust its memory; each must fail
// with ErrLimit, quickly, under the default limits.
func TestHostileTemplatesHitALimit(t *testing.T) {
	cases := []struct {
		name string
		src  string
	}{
		{"a loop of ten billion iterations is cut off", "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"},
		{"an endless output is cut off", "{% for a in range(100000) %}{% for b in range(100000) %}{{ 'x' * 100 }}{% endfor %}{% endfor %}"},
		{"a string doubled in a loop runs out of room", "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}"},
		{"a huge repetition is refused before it is built", "{{ ('x' * 1000000000) | length }}"},
		{"a huge list repetition is refused before it is built", "{{ ([1, 2] * 1000000000) | length }}"},
		{"a list of one long string repeated cannot be printed", "{% set s = 'x' * 1000000 %}{{ [s] * 1000 }}"},
		{"a wide JSON indent over a long list is cut off", "{{ range(100000) | list | tojson(indent=100000) }}"},
		{"batch cannot pad to a huge size", "{{ [1] | batch(1000000000000, 0) | list }}"},
		{"an empty list repeated a trillion times does not loop", "{% for i in range(100000) %}{% for j in range(100000) %}{% set x = [] * 1000000000000 %}{% endfor %}{% endfor %}"},
		{"padding to a huge width is refused", "{{ 'x'.rjust(10000000000) }}"},
		{"endless macro recursion is cut off", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"},
		{"a range beyond Jinja's sandbox bound is refused", "{{ range(100001) | length }}"},
		{"a value nested a thousand deep cannot be printed", "{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v | tojson }}"},
		{"a value nested a thousand deep cannot be compared", "{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v == ns.v }}"},
		{"expressions nested too deep do not parse", "{{ " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + " }}"},
		{"unary operators nested too deep do not parse", "{{ " + strings.Repeat("not ", 10000) + "1 }}"},
		{"blocks nested too deep do not parse", strings.Repeat("{% if true %}", 10000) + strings.Repeat("{% endif %}", 10000)},
		{"scanning a long string over and over is counted", "{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{% set n = s | length %}{% set c = s[-1] %}{% endfor %}"},
		{"copying a long list over and over is counted", "{% set xs = range(100000) | list %}{% for i in range(100000) %}{% set ys = xs | list %}{% endfor %}"},
		{"quadratic membership tests are counted", "{% set xs = range(100000) | list %}{% for i in range(100000) %}{% if -1 in xs %}{% endif %}{% endfor %}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := render(t, c.src, Context{})
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("got %d bytes of output and %v, want ErrLimit", len(out), err)
			}
		})
	}
}

func TestLimitsCanBeTightened(t *testing.T) {
	cases := []struct {
		name string
		src  string
		lim  Limits
	}{
		{"MaxSteps", "{% for i in range(100) %}{% endfor %}", Limits{MaxSteps: 50}},
		{"MaxOutput", "{% for i in range(100) %}xx{% endfor %}", Limits{MaxOutput: 100}},
		{"MaxAlloc", "{{ 'x' * 1000 }}", Limits{MaxAlloc: 500}},
		{"MaxDepth", "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(10) }}", Limits{MaxDepth: 5}},
		{"MaxTime", "{% set s = 'x' * 100000 %}{% set t = 'x' * 100000 %}{% for i in range(4000) %}{% if s == t %}{% endif %}{% endfor %}", Limits{MaxTime: time.Microsecond}},
	}
	for _, c := range cases {
		t.Run(c.name+" stops a template that stays under the default", func(t *testing.T) {
			if _, err := render(t, c.src, Context{}); err != nil {
				t.Fatalf("under the default limits: %v", err)
			}
			if _, err := render(t, c.src, Context{Limits: c.lim}); !errors.Is(err, ErrLimit) {
				t.Fatalf("got %v, want ErrLimit", err)
			}
		})
	}
}

func TestALongConversationStaysWellUnderTheLimits(t *testing.T) {
	src := readShared(t, "Qwen-Qwen3-0.6B.jinja")
	ctx := Context{AddGenerationPrompt: true}
	for i := 0; i < 2000; i++ {
		ctx.Messages = append(ctx.Messages, Message{Role: "user", Content: strings.Repeat("question ", 200)},
			Message{Role: "assistant", Content: "<think>\nhmm\n</think>\n\n" + strings.Repeat("answer ", 200)})
	}
	ctx.Limits = Limits{MaxSteps: DefaultLimits.MaxSteps / 10, MaxAlloc: DefaultLimits.MaxAlloc / 10}
	out, err := render(t, src, ctx)
	if err != nil {
		t.Fatalf("4000 turns need less than a tenth of the default limits: %v", err)
	}
	if !strings.HasSuffix(out, "<|im_start|>assistant\n") {
		t.Fatalf("rendering ends with %q", out[len(out)-40:])
	}
}

func readShared(t testing.TB, name string) string {
	t.Helper()
	b, err := readFile(sharedTemplates(t) + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
