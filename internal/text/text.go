// Package text holds the string helpers the whole project shares, so that
// a message is cut and a commit is shortened the same way everywhere.
package text

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ellipsis marks where Truncate cut.
const ellipsis = "…"

// Truncate cuts s to at most n bytes, on a rune boundary, marking the cut
// with an ellipsis. Limits are in bytes because the API's are.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// ShortCommit is the seven-character form of a commit hash.
func ShortCommit(hash string) string {
	if len(hash) > 7 {
		return hash[:7]
	}
	return hash
}

// Printable is s without control characters but tabs and newlines, nor
// format characters and line or paragraph separators: a Researcher writes
// the strategies, insights and logs that reach a person's terminal, where
// an escape sequence would retitle the window, clear the screen, move the
// cursor over the best result or hide what follows, and a bidirectional
// override would show text in another order than it is.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if hidden(r) {
			return -1
		}
		return r
	}, s)
}

// hidden says whether r changes how text around it shows rather than
// showing itself: a control character but a tab or a newline, a format
// character (bidirectional controls, zero-width characters), or a line or
// paragraph separator.
func hidden(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n' || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// Visible is s with the characters Printable drops written out as escapes
// (\x1b, \u009b, \u202e), and its invalid bytes as U+FFFD: text a
// Researcher wrote, a diff or a log, shown as it is, where an escape
// sequence would make a terminal hide a line, show another in its place,
// or set the clipboard, and a bidirectional override would show code in
// another order than it runs.
func Visible(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case !hidden(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// VisibleWriter writes what it is given to w as Visible does, keeping the
// start of a character that a write cut off for the next.
type VisibleWriter struct {
	w    io.Writer
	rest []byte
}

// NewVisibleWriter is a VisibleWriter to w.
func NewVisibleWriter(w io.Writer) *VisibleWriter { return &VisibleWriter{w: w} }

// Write writes Visible(p) to the underlying writer, but for an incomplete
// character at p's end, which waits for the next write or Flush.
func (v *VisibleWriter) Write(p []byte) (int, error) {
	data := append(v.rest, p...)
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	v.rest = append([]byte(nil), data[cut:]...)
	if _, err := io.WriteString(v.w, Visible(string(data[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what a cut-off character left.
func (v *VisibleWriter) Flush() error {
	rest := v.rest
	v.rest = nil
	_, err := io.WriteString(v.w, Visible(string(rest)))
	return err
}
