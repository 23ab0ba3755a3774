package compiler

import (
	"fmt"
	"math"

	"github.com/akunu-dev/akunu/specs"
)

// checkedHParams are hyperparameters whose file values the spec's
// expressions would carry into the plan unchecked, where the runtime then
// computes nonsense: a RoPE base of 0 makes every rotation angle NaN or
// infinite; a training context of 0 left the plan's context to a guess.
var checkedHParams = map[string]func(s *state, key string, val float64) error{
	"rope_base":     positiveFinite,
	"rope_base_swa": positiveFinite,
	"ctx_train": func(s *state, key string, val float64) error {
		if val < 1 && s.opts.Ctx == 0 {
			return fmt.Errorf("%s = %v: the model's training context must be positive (pass --ctx N to choose the plan's context)", key, val)
		}
		return nil
	},
}

func positiveFinite(_ *state, key string, val float64) error {
	if !(val > 0) || math.IsInf(val, 0) {
		return fmt.Errorf("%s = %v: must be a positive finite number", key, val)
	}
	return nil
}

// checkHParams holds the file's values of checkedHParams to their rules,
// each error naming the file and the key. Only values the file gives are
// checked: a spec's default is the spec's business (specs tests it).
func checkHParams(s *state) error {
	arch := s.file.Architecture()
	for _, k := range s.arch.HParamKeys() {
		check := checkedHParams[k.Name]
		if check == nil || k.Key == "" || k.Len {
			continue
		}
		key := k.FullKey(arch)
		v, ok := s.file.Get(key)
		if !ok {
			continue
		}
		var x float64
		if f, isFloat := v.Float(); isFloat {
			x = f
		} else if i, isInt := v.Int(); isInt {
			x = float64(i)
		} else if u, isUint := v.Uint(); isUint {
			x = float64(u)
		} else {
			continue // an array or a string: Resolve has already judged its type
		}
		if err := check(s, key, x); err != nil {
			return fmt.Errorf("%s: %w: %w", s.fileName, err, specs.ErrBadValue)
		}
	}
	return nil
}
