package runtime

import (
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// Tokenizer builds the plan's tokenizer (tokenizer.FromPlan: the same
// code the compiler checks a plan's vocabulary with before writing it).
func Tokenizer(t *plans.Tokenizer) (*tokenizer.Tokenizer, error) {
	return tokenizer.FromPlan(t)
}
