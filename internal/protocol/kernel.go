package protocol

import (
	"regexp"
	"strings"
)

// kernelEntry is one kernel target as written, before validation. Keys are
// canonical: name, newmodule, baselinemodule, fixture, atol, rtol.
type kernelEntry struct {
	values  map[string]string
	unknown []string
}

var yamlComment = regexp.MustCompile(`\s+#.*$`)

// kernelKeys are the keys of a target, lower case without underscores, so
// that snake and camel case both match.
var kernelKeys = map[string]bool{
	"name": true, "newmodule": true, "baselinemodule": true, "fixture": true, "atol": true, "rtol": true,
}

// parseKernelTargets reads the YAML-like list of the Kernel Targets section,
// fenced or not:
//
//	kernel_targets:
//	  - name: attention
//	    new_module: kernels.attn:flash
//	    baseline_module: reference.attn:naive
//	    fixture: fixtures.attn:small
//	    tolerance: { atol: 1e-5, rtol: 1e-4 }
//
// The tolerance may also be a nested block, or atol and rtol may sit on the
// target itself. Values stay text, so decimals keep their exact spelling.
func parseKernelTargets(secs []*section) []kernelEntry {
	var entries []kernelEntry
	itemIndent := -1
	for _, s := range secs {
		for _, l := range s.lines {
			t := strings.TrimSpace(l.text)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			indent := indentOf(l.text)
			if t == "-" || strings.HasPrefix(t, "- ") {
				if itemIndent < 0 {
					itemIndent = indent
				}
				if indent == itemIndent {
					entries = append(entries, kernelEntry{values: map[string]string{}})
				}
			}
			k, v, ok := keyValue(t)
			if !ok {
				continue
			}
			k = strings.ReplaceAll(k, "_", "")
			if k == "kerneltargets" || k == "targets" {
				continue
			}
			if len(entries) == 0 {
				entries = append(entries, kernelEntry{values: map[string]string{}})
			}
			e := &entries[len(entries)-1]
			v = unquote(yamlComment.ReplaceAllString(v, ""))
			if k == "tolerance" {
				for _, kv := range flowMap(v) {
					e.set(kv[0], kv[1])
				}
				continue
			}
			e.set(k, v)
		}
	}
	return entries
}

func (e *kernelEntry) set(key, value string) {
	canonical := strings.ReplaceAll(strings.ToLower(key), "_", "")
	if !kernelKeys[canonical] {
		e.unknown = append(e.unknown, key)
		return
	}
	e.values[canonical] = value
}

// flowMap reads `{ atol: 1e-5, rtol: 1e-4 }`; anything else is empty, as
// for a tolerance whose values follow on their own lines.
func flowMap(v string) [][2]string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return nil
	}
	var out [][2]string
	for _, pair := range strings.Split(v[1:len(v)-1], ",") {
		k, val, ok := strings.Cut(pair, ":")
		if !ok {
			continue
		}
		out = append(out, [2]string{strings.TrimSpace(k), unquote(strings.TrimSpace(val))})
	}
	return out
}
