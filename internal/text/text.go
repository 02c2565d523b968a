// Package text holds the string helpers the whole project shares, so that
// a message is cut and a commit is shortened the same way everywhere.
package text

import (
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

// Printable is s without control characters but tabs and newlines: a
// Researcher writes the strategies, insights and logs that reach a
// person's terminal, where an escape sequence would retitle the window,
// clear the screen, move the cursor over the best result or hide what
// follows.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' && r != '\n' {
			return -1
		}
		return r
	}, s)
}
