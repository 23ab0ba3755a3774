package specs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/specs"
)

// Each bundle in testdata/errors holds broken spec files (loaded together
// with the built-in ones, which they may inherit from) and, in its "want"
// section, every error the load must report, one per line.
var errorCases = []struct {
	bundle string
	is     []error // sentinels errors.Is must find
}{
	{"syntax_yaml", []error{specs.ErrSyntax}},
	{"syntax_expr", []error{specs.ErrSyntax}},
	{"unknown_op", []error{specs.ErrUnknownOp}},
	{"unknown_key", []error{specs.ErrUnknownKey}},
	{"type_mismatch", []error{specs.ErrType}},
	{"inherit_cycle", []error{specs.ErrCycle, specs.ErrUnknownName}},
	{"hparam_cycle", []error{specs.ErrCycle}},
	{"unknown_tensor", []error{specs.ErrUnknownTensor, specs.ErrType}},
	{"unknown_field", []error{specs.ErrUnknownField}},
	{"unknown_name", []error{specs.ErrUnknownName}},
	{"many", []error{specs.ErrUnknownOp, specs.ErrUnknownKey, specs.ErrInvalid}},
	{"incomplete", []error{specs.ErrInvalid}},
	{"conditional", []error{specs.ErrInvalid}},
}

func TestBrokenSpecsReportEveryErrorAtItsPosition(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.bundle, func(t *testing.T) {
			path := filepath.Join("testdata", "errors", tc.bundle+".txtar")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			comment, files := parseTxtar(data)
			input := builtinFiles(t)
			want := -1
			for i, f := range files {
				if f.name == "want" {
					want = i
					continue
				}
				input[f.name] = f.data
			}
			if want < 0 {
				t.Fatalf("%s has no want section", path)
			}
			_, err = specs.Load(input)
			if err == nil {
				t.Fatal("the bundle loaded without errors")
			}
			var list specs.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("got %T, want an ErrorList", err)
			}
			for _, s := range tc.is {
				if !errors.Is(err, s) {
					t.Errorf("errors.Is(err, %v) is false", s)
				}
			}
			got := err.Error() + "\n"
			if update {
				files[want].data = []byte(got)
				if err := os.WriteFile(path, formatTxtar(comment, files), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if w := string(files[want].data); w != got {
				t.Errorf("errors differ (UPDATE_GOLDEN=1 to accept):\n--- want\n%s--- got\n%s", w, got)
			}
			if n := strings.Count(got, "\n"); n != len(list) {
				t.Errorf("Error() has %d lines for %d errors", n, len(list))
			}
		})
	}
}
