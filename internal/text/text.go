// Package text holds the string helpers the whole project shares, so that
// a message is cut and a commit is shortened the same way everywhere.
package text

import "unicode/utf8"

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
