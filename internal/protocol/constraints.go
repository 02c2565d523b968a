package protocol

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// The API's limits on fixed.constraints.
const (
	maxConstraints      = 32
	maxConstraintLength = 512
)

// fixedKeys are the keys of a Fixed section that other fields read.
var fixedKeys = map[string]bool{"files": true, "time_limit": true, "epoch_limit": true, "train_command": true}

// namingWords are the words that, around file names, only say the files
// are fixed: "evaluate.py (do NOT modify)" states no condition of its own.
var namingWords = map[string]bool{
	"a": true, "all": true, "and": true, "are": true, "as": true, "be": true, "can": true, "cannot": true,
	"code": true, "do": true, "don": true, "dont": true, "edit": true, "edited": true, "file": true,
	"files": true, "fixed": true, "frozen": true, "is": true, "it": true, "its": true, "keep": true,
	"kept": true, "may": true, "modified": true, "modify": true, "must": true, "never": true, "not": true,
	"only": true, "or": true, "read": true, "readonly": true, "remain": true, "remains": true,
	"script": true, "scripts": true, "stay": true, "stays": true, "t": true, "the": true, "touch": true,
	"unchanged": true, "unmodified": true, "untouched": true,
	"不可修改": true, "不可变": true, "不要修改": true, "禁止修改": true, "固定": true,
}

var (
	word = regexp.MustCompile(`[\p{L}\p{N}]+`)
	// sentenceEnd is the end of a sentence in prose: a stop, then space and
	// a capital letter.
	sentenceEnd = regexp.MustCompile(`[.!?]\s+\p{Lu}`)
)

// constraints fills fixed.constraints with the lines of the Fixed sections
// that state a condition rather than only name fixed files: each bullet,
// and each sentence of prose. A constraint whose code nothing keeps fixed
// gets an Unenforced note.
func (b *builder) constraints() {
	const p = "spec.fixed.constraints"
	var list []string
	for _, s := range statements(b.doc.sectionsOf(kindFixed)) {
		if isPlaceholder(s) || b.namesOnlyFiles(s) {
			continue
		}
		if utf8.RuneCountInString(s) > maxConstraintLength {
			b.note(p, "%q is longer than %d characters; shortened", quoteLine(s), maxConstraintLength)
			s = string([]rune(s)[:maxConstraintLength-1]) + "…"
		}
		list = append(list, s)
	}
	if len(list) > maxConstraints {
		b.note(p, "the protocol states %d fixed conditions; kept the first %d, the most the API holds", len(list), maxConstraints)
		list = list[:maxConstraints]
	}
	for i, s := range list {
		if why := b.unenforced(s); why != "" {
			b.unenforcedNotes = append(b.unenforcedNotes, fmt.Sprintf("%s[%d]: %q is only told to the Researcher: %s", p, i, s, why))
		}
	}
	b.obj.Spec.Fixed.Constraints = list
}

// statements splits the lines of secs, less those of the keys other fields
// read, into bullets (with their continuation lines) and prose sentences.
func statements(secs []*section) []string {
	var out []string
	for _, s := range secs {
		var cur []string
		bullet := false
		keyIndent := -1
		flush := func() {
			if len(cur) == 0 {
				return
			}
			text := strings.Join(cur, " ")
			if bullet {
				out = append(out, text)
			} else {
				out = append(out, sentences(text)...)
			}
			cur = nil
		}
		for _, l := range s.lines {
			t := strings.TrimSpace(l.text)
			indent := indentOf(l.text)
			isBullet := bulletPrefix.MatchString(t)
			switch {
			case l.fence != 0 || t == "" || headingLine.MatchString(l.text):
				// A fenced block, a blank line or a heading ends a
				// statement; fenced values belong to the key above them.
				flush()
				continue
			case keyIndent >= 0 && isBullet && indent > keyIndent:
				// An item of the list under a key another field reads.
				continue
			}
			keyIndent = -1
			if k, _, ok := keyValue(t); ok && fixedKeys[k] {
				flush()
				keyIndent = indent
				continue
			}
			if isBullet || len(cur) == 0 {
				flush()
				bullet = isBullet
				cur = []string{stripBullet(t)}
				continue
			}
			cur = append(cur, t)
		}
		flush()
	}
	return out
}

// sentences splits prose at the ends of its sentences.
func sentences(text string) []string {
	var out []string
	for {
		loc := sentenceEnd.FindStringIndex(text)
		if loc == nil {
			break
		}
		// Keep the stop, start the next sentence at its capital letter.
		_, size := utf8.DecodeLastRuneInString(text[:loc[1]])
		out = append(out, strings.TrimSpace(text[:loc[0]+1]))
		text = text[loc[1]-size:]
	}
	return append(out, strings.TrimSpace(text))
}

// namesOnlyFiles reports whether a statement does no more than name files
// as fixed, with or without a label before a colon.
func (b *builder) namesOnlyFiles(s string) bool {
	text := s
	if _, v, ok := keyValue(s); ok {
		text = v
	}
	if len(b.namedFiles(text)) == 0 {
		return false
	}
	for _, w := range word.FindAllString(strings.ToLower(fileToken.ReplaceAllString(text, " ")), -1) {
		if !namingWords[w] {
			return false
		}
	}
	return true
}

// namedFiles lists the files a text names: those of the repository, and those
// the loop writes.
func (b *builder) namedFiles(text string) []string {
	var out []string
	for _, tok := range fileToken.FindAllString(text, -1) {
		f, ok := b.repo.resolve(tok)
		if loopFiles[path.Base(tok)] {
			f, ok = path.Base(tok), true
		}
		if ok && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// unenforced says why compliance cannot notice a change that breaks the
// constraint s, or "" when it can. Compliance keeps every file that is not
// variable as the start commit has it, the loop keeps its own files, and
// fixed regions keep their part of a variable file; so s is enforced when
// it names a file and every variable file it names has fixed regions.
func (b *builder) unenforced(s string) string {
	files := b.namedFiles(s)
	if len(files) == 0 {
		return fmt.Sprintf("it names no file of the repository; list the file that holds it in spec.fixed.files, or wrap the code that holds it in `%s` / `%s` comments in the variable file it is in",
			workspace.RegionBegin, workspace.RegionEnd)
	}
	var open []string
	for _, f := range files {
		if slices.Contains(v1alpha1.Strings(b.obj.Spec.Variable.Files), path.Clean(f)) && !b.repo.marked[f] {
			open = append(open, f)
		}
	}
	if len(open) == 0 {
		return ""
	}
	return fmt.Sprintf("wrap the code that holds it in %s in `%s` / `%s` comments", joinAnd(open), workspace.RegionBegin, workspace.RegionEnd)
}

// joinAnd lists names as "a", "a and b" or "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
