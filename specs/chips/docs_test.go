package chips

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	docsPath   = "../../docs/chips.md"
	rulesBegin = "<!-- rules:begin: generated from rules.go; UPDATE_GOLDEN=1 go test ./specs/chips rewrites it -->\n"
	rulesEnd   = "<!-- rules:end -->"
)

// rulesMarkdown renders the rule table as docs/chips.md shows it.
func rulesMarkdown() string {
	var b strings.Builder
	b.WriteString("| field | when | value | why |\n| --- | --- | --- | --- |\n")
	for _, r := range Rules() {
		v := fmt.Sprint(r.Value)
		if s, ok := r.Value.([]string); ok {
			v = strings.Join(s, ", ")
			if v == "" {
				v = "(none)"
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Field, r.When.Text, v, r.Why)
	}
	return b.String()
}

// The guide shows the rule table the code runs, not an older copy.
func TestTheGuideShowsTheRuleTableTheCodeRuns(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, rulesBegin)
	j := strings.Index(doc, rulesEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q section", docsPath, strings.TrimSpace(rulesBegin), rulesEnd)
	}
	want := rulesMarkdown()
	if got := doc[i+len(rulesBegin) : j]; got != want {
		if os.Getenv("UPDATE_GOLDEN") != "" {
			doc = doc[:i+len(rulesBegin)] + want + doc[j:]
			if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s shows an old rule table (UPDATE_GOLDEN=1 rewrites it):\n%s", docsPath, want)
	}
}
