package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// txtarFile is one file of a txtar archive (the format of Go's own test
// data: "-- name --" lines start files).
type txtarFile struct {
	name string
	data string
}

func parseTxtar(data string) []txtarFile {
	var files []txtarFile
	cur := -1
	for _, line := range strings.SplitAfter(data, "\n") {
		s := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
			files = append(files, txtarFile{name: strings.TrimSpace(s[3 : len(s)-3])})
			cur = len(files) - 1
			continue
		}
		if cur >= 0 {
			files[cur].data += line
		}
	}
	return files
}

// TestReferenceCases holds the interpreter to Jinja2 itself: every case of
// testdata/reference.txtar carries the output Jinja2 rendered with Hugging
// Face's settings (testdata/gen_reference.py), or the exception it raised.
func TestReferenceCases(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "reference.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	files := parseTxtar(string(raw))
	byName := map[string]string{}
	for _, f := range files {
		byName[f.name] = f.data
	}
	n := 0
	for _, f := range files {
		name, ok := strings.CutSuffix(f.name, ".jinja")
		if !ok {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			vars := map[string]any{}
			if js, ok := byName[name+".json"]; ok {
				v, err := decodeJSON([]byte(js))
				if err != nil {
					t.Fatalf("bad %s.json: %v", name, err)
				}
				d := v.(*dict)
				for i, k := range d.keys {
					vars[k.(string)] = d.vals[i]
				}
			}
			for _, k := range []string{"tools", "documents"} {
				if _, ok := vars[k]; !ok {
					vars[k] = nil
				}
			}
			got, rerr := renderSource(f.data, vars)
			if out, ok := byName[name+".out"]; ok {
				var want string
				if err := json.Unmarshal([]byte(out), &want); err != nil {
					t.Fatalf("bad %s.out: %v", name, err)
				}
				if rerr != nil {
					t.Fatalf("failed: %v\nwant: %q", rerr, want)
				}
				if got != want {
					t.Fatalf("\n got: %q\nwant: %q", got, want)
				}
				return
			}
			wantErr, ok := byName[name+".err"]
			if !ok {
				t.Fatalf("case %s has neither .out nor .err: run testdata/gen_reference.py", name)
			}
			wantErr = strings.TrimSpace(wantErr)
			if rerr == nil {
				t.Fatalf("rendered %q, want the error %s", got, wantErr)
			}
			var e *Error
			if !errors.As(rerr, &e) || e.Pos.Line < 1 || e.Pos.Col < 1 {
				t.Fatalf("error %v carries no position", rerr)
			}
			switch {
			case strings.HasPrefix(wantErr, "TemplateError: "):
				if msg, ok := RaisedMessage(rerr); !ok || msg != strings.TrimPrefix(wantErr, "TemplateError: ") {
					t.Fatalf("got %v, want the raised message of %s", rerr, wantErr)
				}
			case strings.HasPrefix(wantErr, "SecurityError: "):
				if !errors.Is(rerr, ErrUnsupported) {
					t.Fatalf("got %v, want a refusal (ErrUnsupported) like %s", rerr, wantErr)
				}
			}
			t.Logf("Jinja2: %s\n   ours: %v", wantErr, rerr)
		})
	}
	if n < 50 {
		t.Fatalf("only %d reference cases found", n)
	}
}

func renderSource(src string, vars map[string]any) (string, error) {
	tmpl, err := ParseNamed("case", src)
	if err != nil {
		return "", err
	}
	return tmpl.render(vars, DefaultLimits, testNow)
}
