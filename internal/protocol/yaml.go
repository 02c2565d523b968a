package protocol

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// missingHints explain fields that the protocol format never holds, in place
// of "not found".
var missingHints = map[string]string{
	"spec.researcher.command": "the protocol format has no researcher. Give the command of the coding agent " +
		"that edits the variable files each round; it runs with sh -c and reads its prompt from " +
		`$AUTORESEARCH_PROMPT_FILE, e.g. claude -p "$(cat "$AUTORESEARCH_PROMPT_FILE")" --allowedTools Edit,Write,Read,Bash`,
}

// YAML renders r.Object for a person to review before use. A header names
// source and lists the missing fields; each Missing field gets a
// "# MISSING:" comment and each Inferred note an "# inferred:" comment, above
// the field they are about (or its nearest enclosing field that is written).
// Keys keep the API's field order; status and empty values are left out.
func YAML(r Result, source string) ([]byte, error) {
	if r.Object == nil {
		return nil, errors.New("no object to render")
	}
	if source == "" {
		source = "the protocol file"
	}
	j, err := json.Marshal(r.Object)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	root, err := decodeNode(dec)
	if err != nil {
		return nil, err
	}
	root.fields = slices.DeleteFunc(root.fields, func(f nodeField) bool { return f.key == "status" })
	// apiVersion leads, as in every manifest.
	slices.SortStableFunc(root.fields, func(a, b nodeField) int {
		return cmp.Compare(rootRank(a.key), rootRank(b.key))
	})
	prune(root)

	present := map[string]bool{}
	collectPaths(root, "", present)
	e := &emitter{comments: map[string][]string{}}
	var header []string
	place := func(p, comment string) {
		for at := p; at != ""; at = parentPath(at) {
			if present[at] {
				e.comments[at] = append(e.comments[at], comment)
				return
			}
		}
		header = append(header, comment)
	}

	// A note about a missing field says why it is missing.
	reasons := map[string]string{}
	var notes []string
	for _, n := range r.Inferred {
		p := notePath(n)
		if _, seen := reasons[p]; !seen && slices.Contains(r.Missing, p) {
			reasons[p] = strings.TrimPrefix(n, p+": ") + "; fill it in"
			continue
		}
		notes = append(notes, n)
	}
	for _, m := range r.Missing {
		reason, ok := reasons[m]
		if !ok {
			reason, ok = missingHints[m]
		}
		if !ok {
			reason = fmt.Sprintf("not found in %s; fill it in", source)
		}
		place(m, fmt.Sprintf("MISSING: %s — %s", m, reason))
	}
	for _, n := range notes {
		place(notePath(n), "inferred: "+n)
	}

	layout := ""
	if r.Layout != "" {
		layout = fmt.Sprintf(" (%s layout)", r.Layout)
	}
	e.comment(0, fmt.Sprintf("AutoResearch imported from %s%s.", source, layout))
	switch len(r.Missing) {
	case 0:
		e.comment(0, "Nothing is missing; review the inferred values before use.")
	case 1:
		e.comment(0, fmt.Sprintf("1 field is missing: %s. Fill it in before use.", r.Missing[0]))
	default:
		e.comment(0, fmt.Sprintf("%d fields are missing: %s. Fill them in before use.", len(r.Missing), strings.Join(r.Missing, ", ")))
	}
	for _, c := range header {
		e.comment(0, c)
	}
	e.mapping(root, 0, "", false)
	return e.buf.Bytes(), nil
}

func rootRank(key string) int {
	switch key {
	case "apiVersion":
		return 0
	case "kind":
		return 1
	}
	return 2
}

type nodeKind int

const (
	scalarNode nodeKind = iota
	mappingNode
	sequenceNode
)

// node is a JSON value that keeps its keys in order, so that the YAML
// follows the API's field order rather than the alphabet.
type node struct {
	kind   nodeKind
	fields []nodeField
	items  []*node
	// value of a scalar: string, json.Number, bool or nil.
	value any
}

type nodeField struct {
	key   string
	value *node
}

func decodeNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return &node{kind: scalarNode, value: tok}, nil
	}
	n := &node{kind: mappingNode}
	if delim == '[' {
		n.kind = sequenceNode
	}
	for dec.More() {
		if n.kind == sequenceNode {
			item, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
			continue
		}
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		value, err := decodeNode(dec)
		if err != nil {
			return nil, err
		}
		n.fields = append(n.fields, nodeField{key: key.(string), value: value})
	}
	// The closing delimiter.
	_, err = dec.Token()
	return n, err
}

// prune drops nulls and empty mappings, which are the API's unset optional
// structs (resources: {}, creationTimestamp: null). Empty lists and empty
// strings stay: they are the slots of missing required fields.
func prune(n *node) {
	for _, item := range n.items {
		prune(item)
	}
	n.fields = slices.DeleteFunc(n.fields, func(f nodeField) bool {
		prune(f.value)
		return (f.value.kind == scalarNode && f.value.value == nil) ||
			(f.value.kind == mappingNode && len(f.value.fields) == 0)
	})
}

func collectPaths(n *node, p string, out map[string]bool) {
	for _, f := range n.fields {
		fp := joinPath(p, f.key)
		out[fp] = true
		collectPaths(f.value, fp, out)
	}
	for i, item := range n.items {
		ip := fmt.Sprintf("%s[%d]", p, i)
		out[ip] = true
		collectPaths(item, ip, out)
	}
}

func joinPath(p, key string) string {
	if p == "" {
		return key
	}
	return p + "." + key
}

// parentPath strips the last key or index: spec.kernelTargets[0].name gives
// spec.kernelTargets[0], which gives spec.kernelTargets.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

type emitter struct {
	buf      bytes.Buffer
	comments map[string][]string
}

func (e *emitter) comment(indent int, text string) {
	e.buf.WriteString(strings.Repeat(" ", indent) + "# " + oneLine(text) + "\n")
}

func (e *emitter) commentsFor(indent int, p string) {
	for _, c := range e.comments[p] {
		e.comment(indent, c)
	}
}

// mapping writes n's fields at indent. With dash, n is a sequence item and
// its first field goes on the dash's line.
func (e *emitter) mapping(n *node, indent int, p string, dash bool) {
	for i, f := range n.fields {
		fp := joinPath(p, f.key)
		head := strings.Repeat(" ", indent)
		if dash && i == 0 {
			e.commentsFor(indent-2, fp)
			head = strings.Repeat(" ", indent-2) + "- "
		} else {
			e.commentsFor(indent, fp)
		}
		e.value(head+keyString(f.key)+":", f.value, indent, fp)
	}
}

// value writes n after head, a "key:" or "-" at indent.
func (e *emitter) value(head string, n *node, indent int, p string) {
	switch {
	case n.kind == mappingNode && len(n.fields) == 0:
		e.buf.WriteString(head + " {}\n")
	case n.kind == mappingNode:
		e.buf.WriteString(head + "\n")
		e.mapping(n, indent+2, p, false)
	case n.kind == sequenceNode && len(n.items) == 0:
		e.buf.WriteString(head + " []\n")
	case n.kind == sequenceNode:
		e.buf.WriteString(head + "\n")
		itemIndent := indent
		if strings.HasSuffix(head, "-") {
			itemIndent += 2
		}
		e.sequence(n, itemIndent, p)
	default:
		e.buf.WriteString(head + " " + scalarString(n.value, indent+2) + "\n")
	}
}

func (e *emitter) sequence(n *node, indent int, p string) {
	for i, item := range n.items {
		ip := fmt.Sprintf("%s[%d]", p, i)
		if item.kind == mappingNode && len(item.fields) > 0 {
			e.commentsFor(indent, ip)
			e.mapping(item, indent+2, ip, true)
			continue
		}
		e.commentsFor(indent, ip)
		e.value(strings.Repeat(" ", indent)+"-", item, indent, ip)
	}
}

func scalarString(v any, indent int) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		if v {
			return "true"
		}
		return "false"
	case json.Number:
		return v.String()
	case string:
		switch {
		case plainSafe(v):
			return v
		case literalSafe(v):
			pad := strings.Repeat(" ", indent)
			lines := strings.Split(v, "\n")
			for i, l := range lines {
				if l != "" {
					lines[i] = pad + l
				}
			}
			return "|-\n" + strings.Join(lines, "\n")
		}
		return doubleQuoted(v)
	}
	return doubleQuoted(fmt.Sprint(v))
}

func keyString(k string) string {
	if plainSafe(k) {
		return k
	}
	return doubleQuoted(k)
}

var (
	// goDuration is the one shape of plain scalar starting with a digit that
	// no YAML version reads as a number, date or time: 5m0s, 300ms.
	goDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
	// yamlWords are plain scalars that YAML 1.1 or 1.2 reads as bool or null.
	yamlWords = map[string]bool{
		"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true,
		"y": true, "n": true, "null": true, "~": true,
	}
)

// plainSafe reports whether s can be written unquoted and read back as the
// same string by any YAML parser. It is deliberately strict: anything
// unusual is quoted.
func plainSafe(s string) bool {
	if s == "" || yamlWords[strings.ToLower(s)] || strings.Contains(s, ": ") || strings.HasSuffix(s, ":") {
		return false
	}
	for i, r := range s {
		switch {
		case r > unicode.MaxASCII:
			if !unicode.IsPrint(r) || r == '\ufeff' {
				return false
			}
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_./$()", r):
		case strings.ContainsRune(" +=,:@%~-?!;&*<>'\"|`[]{}", r):
			// Indicators only at the start of a plain scalar.
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if c := s[0]; (c >= '0' && c <= '9') || c == '.' {
		return goDuration.MatchString(s)
	}
	return true
}

// literalSafe reports whether multi-line s can be a `|-` block scalar.
func literalSafe(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasPrefix(s, "\n") || strings.HasSuffix(s, "\n") {
		return false
	}
	for _, l := range strings.Split(s, "\n") {
		if l != "" && strings.TrimSpace(l) == "" {
			return false
		}
	}
	if s[0] == ' ' || s[0] == '\t' {
		return false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && needsEscape(r) {
			return false
		}
	}
	return true
}

// needsEscape reports the runes YAML does not allow unescaped, or reads as
// line breaks.
func needsEscape(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
		r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff
}

func doubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// oneLine keeps a comment on its line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if needsEscape(r) {
			return ' '
		}
		return r
	}, s)
}
