package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"go.yaml.in/yaml/v3"
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
// "# MISSING:" comment, each Inferred note an "# inferred:" comment and each
// Unenforced note a "# not enforced:" comment, above the field they are
// about (or its nearest enclosing field that is written).
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
	// apiVersion leads, as in every manifest; status is never written.
	var fields, typeMeta []*yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "status":
		case "apiVersion":
			typeMeta = append(slices.Clone(root.Content[i:i+2]), typeMeta...)
		case "kind":
			typeMeta = append(typeMeta, root.Content[i:i+2]...)
		default:
			fields = append(fields, root.Content[i:i+2]...)
		}
	}
	root.Content = append(typeMeta, fields...)
	// A missing field the API leaves out when empty gets an empty slot for
	// the person to fill in.
	for _, m := range r.Missing {
		if strings.HasPrefix(m, "spec.") {
			addSlot(root, reflect.TypeFor[v1alpha1.AutoResearch](), strings.Split(m, "."))
		}
	}
	// Comments go on the key of a field or on an item of a list.
	at := map[string]*yaml.Node{}
	prune(root, "", at)

	var header []string
	place := func(p, comment string) {
		comment = "# " + oneLine(comment)
		for ; p != ""; p = parentPath(p) {
			if n := at[p]; n != nil {
				n.HeadComment = strings.TrimPrefix(n.HeadComment+"\n"+comment, "\n")
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
	for _, n := range r.Unenforced {
		place(notePath(n), "not enforced: "+n)
	}

	layout := ""
	if r.Layout != "" {
		layout = fmt.Sprintf(" (%s layout)", r.Layout)
	}
	summary := "Nothing is missing; review the inferred values before use."
	switch len(r.Missing) {
	case 0:
	case 1:
		summary = fmt.Sprintf("1 field is missing: %s. Fill it in before use.", r.Missing[0])
	default:
		summary = fmt.Sprintf("%d fields are missing: %s. Fill them in before use.", len(r.Missing), strings.Join(r.Missing, ", "))
	}
	lead := []string{
		"# " + oneLine(fmt.Sprintf("AutoResearch imported from %s%s.", source, layout)),
		"# " + oneLine(summary),
	}
	switch n := len(r.Unenforced); {
	case n == 1:
		lead = append(lead, "# 1 fixed constraint is only told to the Researcher, and compliance cannot check it; see spec.fixed.constraints.")
	case n > 1:
		lead = append(lead, fmt.Sprintf("# %d fixed constraints are only told to the Researcher, and compliance cannot check them; see spec.fixed.constraints.", n))
	}
	header = append(lead, header...)
	root.HeadComment = strings.Join(header, "\n")

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeNode reads the next JSON value as a YAML node, keeping the order of
// keys. A string is written as the yaml encoder writes a Go string: quoted
// where YAML 1.1 or 1.2 would read it as a number, bool, null, date or
// sexagesimal, escaped where it holds control characters, and as a literal
// block where it has several lines.
func decodeNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	n := &yaml.Node{}
	switch tok := tok.(type) {
	case json.Delim:
		n.Kind = yaml.MappingNode
		if tok == '[' {
			n.Kind = yaml.SequenceNode
		}
	case json.Number:
		n.Kind, n.Value = yaml.ScalarNode, tok.String()
		return n, nil
	case string:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", tok
		// The style the encoder picks for a Go string, unless that would
		// not read back (a literal block whose first line starts with a tab).
		var probe yaml.Node
		if err := probe.Encode(tok); err != nil || probe.Value != tok {
			n.Style = yaml.DoubleQuotedStyle
		} else {
			n.Style = probe.Style
		}
		return n, nil
	default:
		return n, n.Encode(tok)
	}
	// A mapping's content is its keys and values in turn.
	for dec.More() {
		item, err := decodeNode(dec)
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, item)
	}
	// The closing delimiter.
	_, err = dec.Token()
	return n, err
}

// prune drops nulls and empty mappings, which are the API's unset optional
// structs (resources: {}, creationTimestamp: null). Empty lists and empty
// strings stay: they are the slots of missing required fields. at gets the
// node that a comment about each written path goes on: the key of a field,
// or an item of a list.
func prune(n *yaml.Node, p string, at map[string]*yaml.Node) {
	if n.Kind == yaml.SequenceNode {
		for i, item := range n.Content {
			ip := fmt.Sprintf("%s[%d]", p, i)
			at[ip] = item
			prune(item, ip, at)
		}
		return
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := joinPath(p, k.Value)
		prune(v, fp, at)
		if v.Tag == "!!null" || (v.Kind == yaml.MappingNode && len(v.Content) == 0) {
			continue
		}
		at[fp] = k
		kept = append(kept, k, v)
	}
	n.Content = kept
}

// addSlot makes sure the mapping n, of Go type t, holds the field path
// names (JSON names, no list indices), creating an empty value of the
// field's kind where it is absent, in the type's field order.
func addSlot(n *yaml.Node, t reflect.Type, path []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct || len(path) == 0 || strings.Contains(path[0], "[") {
		return
	}
	order, f, ok := jsonField(t, path[0])
	if !ok {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == path[0] {
			addSlot(n.Content[i+1], f.Type, path[1:])
			return
		}
	}
	v := emptyValue(f.Type)
	if len(path) > 1 {
		v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		addSlot(v, f.Type, path[1:])
	}
	at := len(n.Content)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if later, _, found := jsonField(t, n.Content[i].Value); found && later > order {
			at = i
			break
		}
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[0]}
	n.Content = slices.Insert(n.Content, at, key, v)
}

// jsonField finds the field of struct t whose JSON name is name, and its
// position among the fields.
func jsonField(t reflect.Type, name string) (int, reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return i, f, true
		}
	}
	return 0, reflect.StructField{}, false
}

// emptyValue is the slot of a missing field: "" for a string, [] for a
// list, 0 for a number.
func emptyValue(t reflect.Type) *yaml.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"}
	case reflect.Struct:
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle}
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

// oneLine keeps a comment on its line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff {
			return ' '
		}
		return r
	}, s)
}
