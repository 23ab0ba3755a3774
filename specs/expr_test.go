package specs_test

import (
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs"
)

// exprValue adds the hparam v = expr to a copy of llama and resolves it
// against stories260K's metadata, which lacks rope.freq_base and has
// expert_count = 0 (a missing and a present optional key). Line 4 of the
// spec holds the expression, from column 7.
func exprValue(t *testing.T, expr string) (specs.Value, error) {
	t.Helper()
	files := builtinFiles(t)
	files["archs/t.yaml"] = []byte("inherit: llama\narchitectures: [t]\nhparams:\n  v: '" + strings.ReplaceAll(expr, "'", "''") + "'\n")
	r, err := specs.Load(files)
	if err != nil {
		return specs.Value{}, err
	}
	a, _ := r.ForArchitecture("t")
	md := stories260K()
	for k, v := range md.KV {
		if rest, ok := strings.CutPrefix(k, "llama."); ok {
			md.KV["t."+rest] = v
		}
	}
	md.KV["general.architecture"] = specs.StringValue("t")
	md.KV["t.expert_count"] = specs.IntValue(0)
	hp, err := a.Resolve(md)
	if err != nil {
		return specs.Value{}, err
	}
	if v, ok := hp.Values["v"]; ok {
		return v, nil
	}
	return specs.ArrayValue(specs.KindInvalid, 0, hp.LayerValues["v"]), nil
}

func TestExpressionsEvaluate(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"7 / 2", "3"},
		{"7 / 2.0", "3.5"},
		{"7 % 4", "3"},
		{"-dim + 1", "-63"},
		{"dim / heads", "8"},
		{"sqrt(dim)", "8.0"},
		{"sqrt(float(dim)) * 2", "16.0"},
		{"meta.attention.key_length ?? dim / heads", "8"},
		{"meta.attention.key_length ?? meta.rope.dimension_count ?? 0", "8"},
		{"meta.expert_count ?? 5", "0"},
		{"meta.rope.freq_base ?? 10000", "10000.0"},
		{"meta.rope.freq_base ?? 10000 > 5000", "true"},
		{`gguf("tokenizer.ggml.bos_token_id") ?? 1`, "1"},
		{`len(gguf("tokenizer.ggml.tokens"))`, "512"},
		{"select(dim > 32, 1.5, 2)", "1.5"},
		{"select(dim < 32, meta.rope.freq_base, 2.0)", "2.0"},
		{"min(3, dim, 7)", "3"},
		{"max(3, 2.5)", "3.0"},
		{"abs(-4)", "4"},
		{"int(2.9)", "2"},
		{"pow(2, 10)", "1024.0"},
		{"dim == 64 && !(heads != 8) || false", "true"},
		{"rope_scaling == \"none\"", "false"},
		{"layer % 6 != 5", "[true, true, true, true, true]"},
		{"layer * 10 + heads", "[8, 18, 28, 38, 48]"},
		{`has_tensor("output.weight")`, "true"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			v, err := exprValue(t, tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := v.String()
			if v.Kind == specs.KindArray {
				parts := make([]string, len(v.Elems))
				for i, e := range v.Elems {
					parts[i] = e.String()
				}
				got = "[" + strings.Join(parts, ", ") + "]"
			}
			if got != tc.want {
				t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
			}
		})
	}
}

func TestExpressionErrorsAreStatic(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"dim +", "archs/t.yaml:4:12: hparams.v: unexpected end of text (expected an operand)"},
		{"dim ?? 4", "archs/t.yaml:4:11: hparams.v: the left side of ?? reads no metadata, so it is never missing"},
		{"dim && true", "archs/t.yaml:4:11: hparams.v: && wants bools, found int && bool"},
		{`select(true, 1, "a")`, `archs/t.yaml:4:7: hparams.v: select's alternatives differ: int and string`},
		{"sqrt(1, 2)", "archs/t.yaml:4:7: hparams.v: sqrt takes 1 argument(s), found 2"},
		{"len(dim)", "archs/t.yaml:4:11: hparams.v: len wants an array or a string, found int"},
		{"meta.attention.key_lenght", `archs/t.yaml:4:7: hparams.v: unknown metadata key "attention.key_lenght" (did you mean attention.key_length?)`},
		{`gguf("llama.block_count")`, `archs/t.yaml:4:7: hparams.v: unknown metadata key "llama.block_count"`},
		{"matmul(dim, dim)", "archs/t.yaml:4:7: hparams.v: matmul is an op of the layer program, not a function of expressions"},
		{"head_dimm", `archs/t.yaml:4:7: hparams.v: unknown hparam "head_dimm" (did you mean head_dim?)`},
		{"v + 1", "archs/t.yaml:4:3: hparams.v: hparam cycle: v -> v"},
		{"f(x=1)", "archs/t.yaml:4:9: hparams.v: f takes no named arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := exprValue(t, tc.expr)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestADivisionByZeroNamesTheHparam(t *testing.T) {
	_, err := exprValue(t, "dim / (heads - 8)")
	want := "archs/t.yaml:4:11: hparams.v: division by zero in dim / (heads - 8)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
