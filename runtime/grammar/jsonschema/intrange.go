package jsonschema

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// intRange is GBNF alternatives for the decimal integers lo..hi (JSON's
// spelling: no leading zeros, "-" for negatives; "-0" where 0 is in
// range and so are negatives, as llama.cpp); math.MinInt64 and
// math.MaxInt64 stand for no bound.
func intRange(lo, hi int64) string {
	var alts []string
	if lo < 0 {
		// Negatives: "-" then the magnitudes max(0,-hi)..-lo.
		mlo := uint64(0)
		if lo == math.MinInt64 {
			mlo = 1 // llama.cpp's unbounded negatives start at -1
		}
		if hi < 0 {
			mlo = uint64(-hi)
		}
		var mags string
		if lo == math.MinInt64 {
			mags = uintFrom(mlo)
		} else {
			mags = uintRange(mlo, uint64(-lo))
		}
		alts = append(alts, `"-" (`+mags+`)`)
	}
	if hi >= 0 {
		from := uint64(max(lo, 0))
		if hi == math.MaxInt64 {
			alts = append(alts, uintFrom(from))
		} else {
			alts = append(alts, uintRange(from, uint64(hi)))
		}
	}
	return strings.Join(alts, " | ")
}

// uintFrom is GBNF for the integers ≥ lo.
func uintFrom(lo uint64) string {
	d := len(strconv.FormatUint(lo, 10))
	top := uint64(math.Pow10(d)) - 1
	alts := []string{uintRange(lo, top)}
	alts = append(alts, fmt.Sprintf("[1-9] [0-9]{%d,15}", d)) // every longer number
	return strings.Join(alts, " | ")
}

// uintRange is GBNF for the integers lo..hi (lo ≤ hi).
func uintRange(lo, hi uint64) string {
	var alts []string
	for lo <= hi {
		d := len(strconv.FormatUint(lo, 10))
		top := uint64(math.Pow10(d)) - 1
		if d >= 19 {
			top = math.MaxUint64
		}
		end := min(hi, top)
		alts = append(alts, sameLength(strconv.FormatUint(lo, 10), strconv.FormatUint(end, 10))...)
		if end == math.MaxUint64 {
			break
		}
		lo = end + 1
	}
	return strings.Join(alts, " | ")
}

// sameLength is alternatives for the numbers from a to b, both of the
// same number of digits, as sequences of digit classes.
func sameLength(a, b string) []string {
	if a == b {
		return []string{`"` + a + `"`}
	}
	// Common prefix.
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	prefix := ""
	if i > 0 {
		prefix = `"` + a[:i] + `" `
	}
	a, b = a[i:], b[i:]
	rest := len(a) - 1
	allZero := strings.Trim(a[1:], "0") == ""
	allNine := strings.Trim(b[1:], "9") == ""
	var alts []string
	class := func(x, y byte) string {
		if x == y {
			return `"` + string(x) + `"`
		}
		return "[" + string(x) + "-" + string(y) + "]"
	}
	tail := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(" [0-9]{%d}", n)
	}
	if rest == 0 {
		return []string{prefix + class(a[0], b[0])}
	}
	loD, hiD := a[0], b[0]
	if !allZero {
		for _, s := range sameLength(a[1:], strings.Repeat("9", rest)) {
			alts = append(alts, prefix+`"`+string(a[0])+`" `+s)
		}
		loD++
	}
	if !allNine {
		hiD--
	}
	if loD <= hiD {
		alts = append(alts, prefix+class(loD, hiD)+tail(rest))
	}
	if !allNine {
		for _, s := range sameLength(strings.Repeat("0", rest), b[1:]) {
			alts = append(alts, prefix+`"`+string(b[0])+`" `+s)
		}
	}
	return alts
}
