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

func TestPrintable(t *testing.T) {
	cases := map[string]string{
		"double \x1b]0;title\x07\x1b[2J\x1b[31mred SCORE": "double ]0;title[2J[31mred SCORE",
		"a\tb\nc\r\x7f\u009b2J":                           "a\tb\nc2J",
		"plain — text ✅":                                  "plain — text ✅",
	}
	for in, want := range cases {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
