package compiler

import "testing"

func TestBuiltinRulesParse(t *testing.T) {
	rs, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		t.Log(r.Pos, r)
	}
}
