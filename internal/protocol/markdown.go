package protocol

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// sectionKind names what a section of the protocol file holds, independent
// of the layout and of any note in its heading.
type sectionKind string

const (
	kindUnknown     sectionKind = ""
	kindFixed       sectionKind = "fixed"
	kindVariable    sectionKind = "variable"
	kindEval        sectionKind = "eval"
	kindTrain       sectionKind = "train"
	kindProfile     sectionKind = "profile"
	kindKernel      sectionKind = "kernel"
	kindQuestion    sectionKind = "question"
	kindPressure    sectionKind = "pressure"
	kindTermination sectionKind = "termination"
	kindEnvironment sectionKind = "environment"
	kindAgent       sectionKind = "agent"
)

// sectionKinds maps the first word of a heading to its kind. Only the first
// word counts, so "## Fixed（不可变：代码 + 条件）", "## Fixed Conditions" and
// "## Eval (fixed)" are all recognised.
var sectionKinds = map[string]sectionKind{
	"fixed":          kindFixed,
	"variable":       kindVariable,
	"eval":           kindEval,
	"evaluation":     kindEval,
	"train":          kindTrain,
	"training":       kindTrain,
	"profile":        kindProfile,
	"profiling":      kindProfile,
	"kernel":         kindKernel,
	"kernels":        kindKernel,
	"kernel_targets": kindKernel,
	"research":       kindQuestion,
	"question":       kindQuestion,
	"pressure":       kindPressure,
	"termination":    kindTermination,
	"environment":    kindEnvironment,
	"agent":          kindAgent,
}

// olderKinds only exist in the older, prose layout.
var olderKinds = map[sectionKind]bool{
	kindQuestion:    true,
	kindPressure:    true,
	kindTermination: true,
	kindEnvironment: true,
	kindAgent:       true,
}

// document is a protocol file split into its title, the lines outside any
// section (top-level keys and front matter) and its sections.
type document struct {
	title    string
	hasTitle bool
	// protocolTitle is set when the title reads "Autoresearch Protocol".
	protocolTitle bool
	preamble      *section
	sections      []*section
}

type section struct {
	// heading is the heading text without its # marks; empty for the preamble.
	heading string
	kind    sectionKind
	lines   []line
}

type line struct {
	// text is the line without trailing whitespace.
	text string
	// fence numbers the fenced code block the line is in; 0 outside fences.
	fence int
}

var (
	htmlComment  = regexp.MustCompile(`(?s)<!--.*?-->`)
	headingLine  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	bulletPrefix = regexp.MustCompile(`^(?:[-*+]|\d+[.)])\s+`)
	titlePrefix  = regexp.MustCompile(`(?i)^auto-?research\s+protocol\b[\s:：\-–—]*`)
	firstWord    = regexp.MustCompile(`^[A-Za-z0-9_]+`)
	placeholder  = regexp.MustCompile(`^<[^<>]*>$`)
)

func parseDocument(text string) *document {
	// The API carries text as JSON, which has no room for invalid UTF-8.
	text = strings.ToValidUTF8(strings.TrimPrefix(text, "\ufeff"), "\ufffd")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	// Templates wrap optional sections in HTML comments; they are never content.
	text = htmlComment.ReplaceAllString(text, "")

	doc := &document{preamble: &section{}}
	current := doc.preamble
	fences, inFence, marker := 0, false, ""
	for _, raw := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if m := fenceMarker(trimmed); m != "" && (!inFence || strings.HasPrefix(trimmed, marker)) {
			if inFence {
				inFence = false
			} else {
				inFence, marker = true, m
				fences++
			}
			continue
		}
		if !inFence {
			if m := headingLine.FindStringSubmatch(raw); m != nil {
				level, heading := len(m[1]), m[2]
				if level == 1 && !doc.hasTitle {
					doc.hasTitle = true
					doc.protocolTitle = titlePrefix.MatchString(heading)
					doc.title = strings.TrimSpace(titlePrefix.ReplaceAllString(heading, ""))
					continue
				}
				// Deeper unknown headings are part of the section they are in;
				// a second title line is a comment in a YAML-like block.
				if kind := kindOf(heading); level == 2 || (level > 2 && kind != kindUnknown) {
					current = &section{heading: heading, kind: kind}
					doc.sections = append(doc.sections, current)
					continue
				}
			}
		}
		l := line{text: strings.TrimRight(raw, " \t")}
		if inFence {
			l.fence = fences
		}
		current.lines = append(current.lines, l)
	}
	return doc
}

func fenceMarker(trimmed string) string {
	for _, m := range []string{"```", "~~~"} {
		if strings.HasPrefix(trimmed, m) {
			return m
		}
	}
	return ""
}

func kindOf(heading string) sectionKind {
	return sectionKinds[strings.ToLower(firstWord.FindString(heading))]
}

// layout tells the two layouts apart by the sections only the older one has.
func (d *document) layout() string {
	for _, s := range d.sections {
		if olderKinds[s.kind] || strings.Contains(strings.ToLower(s.heading), "conditions") {
			return LayoutOlder
		}
	}
	return LayoutCurrent
}

// recognised reports whether the text is a protocol at all.
func (d *document) recognised() bool {
	if d.protocolTitle {
		return true
	}
	for _, s := range d.sections {
		if s.kind != kindUnknown {
			return true
		}
	}
	for _, l := range d.preamble.lines {
		if k, _, ok := keyValue(l.text); ok && topLevelKeys[k] {
			return true
		}
	}
	return false
}

// topLevelKeys are the keys the current layout writes outside any section.
var topLevelKeys = map[string]bool{
	"research_question": true,
	"max_rounds":        true,
	"target":            true,
	"baseline":          true,
}

// sectionsOf returns the sections of the given kinds in file order; the
// preamble stands for kindUnknown.
func (d *document) sectionsOf(kinds ...sectionKind) []*section {
	var out []*section
	for _, k := range kinds {
		if k == kindUnknown {
			out = append(out, d.preamble)
			continue
		}
		for _, s := range d.sections {
			if s.kind == k {
				out = append(out, s)
			}
		}
	}
	return out
}

// field is a key-value line found in the file.
type field struct {
	key   string
	value string
	// line is the whole line, for notes that quote where a value came from.
	line    string
	section *section
}

// find returns the first line in secs whose key is one of keys. A key
// without a value on its line takes the fenced block right below it, or the
// items of a list nested under it, joined with commas.
func find(secs []*section, keys ...string) (field, bool) {
	for _, s := range secs {
		for i, l := range s.lines {
			k, v, ok := keyValue(l.text)
			if !ok || !slices.Contains(keys, k) {
				continue
			}
			if v == "" {
				v = fencedBelow(s.lines[i+1:])
			}
			if v == "" {
				v = listBelow(l.text, s.lines[i+1:])
			}
			return field{key: k, value: v, line: quoteLine(l.text), section: s}, true
		}
	}
	return field{}, false
}

func fencedBelow(lines []line) string {
	var block []string
	fence := 0
	for _, l := range lines {
		if l.fence == 0 {
			if fence != 0 || strings.TrimSpace(l.text) != "" {
				break
			}
			continue
		}
		if fence != 0 && l.fence != fence {
			break
		}
		fence = l.fence
		block = append(block, l.text)
	}
	return strings.TrimSpace(dedent(block))
}

func listBelow(parent string, lines []line) string {
	// Under a bullet the items are nested deeper; under a plain key, YAML
	// also allows them at the key's own indentation.
	minIndent := indentOf(parent)
	if bulletPrefix.MatchString(strings.TrimSpace(parent)) {
		minIndent++
	}
	var items []string
	for _, l := range lines {
		if indentOf(l.text) < minIndent || !bulletPrefix.MatchString(strings.TrimSpace(l.text)) {
			break
		}
		items = append(items, stripBullet(l.text))
	}
	return strings.Join(items, ", ")
}

func indentOf(text string) int {
	return len(text) - len(strings.TrimLeft(text, " \t"))
}

// keyValue splits `- key: value`, `key: value`, `**key**: value` and
// `key：value` lines. Keys are normalised to lower_snake_case; values lose
// one pair of enclosing quotes or backticks.
func keyValue(text string) (key, value string, ok bool) {
	s := bulletPrefix.ReplaceAllString(strings.TrimSpace(text), "")
	i := strings.IndexAny(s, ":：")
	if i <= 0 {
		return "", "", false
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	key = strings.Trim(s[:i], "*` \t")
	if key == "" || utf8.RuneCountInString(key) > 40 || strings.ContainsAny(key, "()[]{}<>\"'`=#/\\|") {
		return "", "", false
	}
	value = strings.TrimSpace(strings.TrimLeft(s[i+size:], "*"))
	return normalizeKey(key), unquote(value), true
}

func normalizeKey(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	return strings.Join(strings.FieldsFunc(k, func(r rune) bool { return r == ' ' || r == '-' || r == '\t' }), "_")
}

// unquote removes one pair of enclosing quotes or backticks, unless the
// same quote also appears inside (`"a" and "b"` stays as it is).
func unquote(v string) string {
	if len(v) < 2 {
		return v
	}
	q := v[0]
	if (q == '"' || q == '\'' || q == '`') && v[len(v)-1] == q && !strings.ContainsRune(v[1:len(v)-1], rune(q)) {
		return strings.TrimSpace(v[1 : len(v)-1])
	}
	return v
}

// isPlaceholder reports an unfilled template value such as `<metric>`.
func isPlaceholder(v string) bool {
	return placeholder.MatchString(strings.TrimSpace(v))
}

// dedent removes the indentation all non-blank lines share and trims
// trailing blank lines.
func dedent(lines []string) string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// paragraphs joins a section's prose: lines of a paragraph with spaces,
// paragraphs with a blank line.
func paragraphs(lines []line) string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()
	return strings.Join(paras, "\n\n")
}
