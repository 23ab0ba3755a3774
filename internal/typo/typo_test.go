package typo

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"rmsnorm", "rmsnorm", 0},
		{"rmsnrom", "rmsnorm", 1}, {"valeu", "value", 1}, {"kitten", "sitting", 3},
		{"m4pro", "m4-pro", 1}, {"root", "foo", 2}, {"ab", "ba", 1}, {"abc", "ca", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
