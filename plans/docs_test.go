package plans

import (
	"os"
	"strings"
	"testing"
)

const (
	schemaBegin = "<!-- schema:begin: generated from schema.go; UPDATE_GOLDEN=1 go test ./plans rewrites it -->\n"
	schemaEnd   = "<!-- schema:end -->\n"
)

// TestFormatDocShowsTheSchema keeps FORMAT.md's field listing the one the
// code writes.
func TestFormatDocShowsTheSchema(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, schemaBegin), strings.Index(s, schemaEnd)
	if i < 0 || j < i {
		t.Fatalf("FORMAT.md lacks the schema markers %q and %q", schemaBegin, schemaEnd)
	}
	want := "```\n" + schemaListing() + "```\n"
	if s[i+len(schemaBegin):j] == want {
		return
	}
	if update {
		s = s[:i+len(schemaBegin)] + want + s[j:]
		if err := os.WriteFile("FORMAT.md", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("FORMAT.md shows an old schema (UPDATE_GOLDEN=1 rewrites it)")
}
