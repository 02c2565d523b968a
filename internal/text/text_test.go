package text

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	cases := map[string]struct {
		s    string
		n    int
		want string
	}{
		"short enough":       {"abc", 3, "abc"},
		"cut":                {"abcdef", 5, "ab…"},
		"on a rune boundary": {"ééé", 5, "é…"},
		"no room":            {"abcdef", 2, "…"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Truncate(tc.s, tc.n)
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

func TestShortCommit(t *testing.T) {
	if got := ShortCommit("5a5a5a5a5a"); got != "5a5a5a5" {
		t.Errorf("ShortCommit = %q", got)
	}
	if got := ShortCommit("abc"); got != "abc" {
		t.Errorf("ShortCommit of a short name = %q", got)
	}
}
