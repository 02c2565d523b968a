// Package metric reads metric values out of the text that training and
// evaluation commands print, detects diverged training runs from their logs,
// and converts metric values to and from the decimal strings the API stores.
//
// Output is read line by line; both "\n" and "\r" end a line, so progress
// lines that a training script redraws with a carriage return count as lines
// of their own.
package metric

import (
	"fmt"
	"regexp"
	"strings"
)

// Value is one metric reading found in output.
type Value struct {
	// Name is the metric name.
	Name string
	// Value is the number that was read. NaN and ±Inf are possible.
	Value float64
	// Raw is the number text as printed.
	Raw string
	// Line is the whole line the reading was found on.
	Line string
}

// Find returns the last reading of metric name in output.
//
// Without a pattern it recognises `name: 0.123`, `name=0.123` and
// `name = 1e-3`, also among several such pairs on one line and with the name
// in quotes (`{"name": 0.5}`). The name is case-sensitive and must be a whole
// token, so val_bpb does not match xval_bpb or train/val_bpb. The number must
// end where the token ends: `name: 3.1GB` is not a reading.
//
// A non-empty pattern is a Go regular expression matched against each line. It
// must have a group named `value` or exactly one capture group, whose text is
// the number; name then only labels the result.
//
// ok is false when there is no reading. err is only set for an invalid pattern.
func Find(output, name, pattern string) (v Value, ok bool, err error) {
	if pattern != "" {
		re, group, err := compilePattern(pattern)
		if err != nil {
			return Value{}, false, err
		}
		v, ok := findPattern(output, name, re, group)
		return v, ok, nil
	}
	if name == "" {
		return Value{}, false, nil
	}
	lines := splitLines(output)
	for i := len(lines) - 1; i >= 0; i-- {
		if v, ok := lastReadingOf(lines[i], name); ok {
			return v, true, nil
		}
	}
	return Value{}, false, nil
}

// All returns the last reading of every `name: number` or `name=number` pair
// in output, keyed by name. Names start with a letter or underscore and
// consist of letters, digits and `_./-`.
func All(output string) map[string]Value {
	values := map[string]Value{}
	for _, line := range splitLines(output) {
		for _, v := range pairs(line) {
			values[v.Name] = v
		}
	}
	return values
}

func compilePattern(pattern string) (*regexp.Regexp, int, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid metric pattern %q: %w", pattern, err)
	}
	if group := re.SubexpIndex("value"); group > 0 {
		return re, group, nil
	}
	if re.NumSubexp() != 1 {
		return nil, 0, fmt.Errorf("invalid metric pattern %q: it needs a group named \"value\", as in (?P<value>...), or exactly one capture group, but has %d capture groups", pattern, re.NumSubexp())
	}
	return re, 1, nil
}

func findPattern(output, name string, re *regexp.Regexp, group int) (Value, bool) {
	lines := splitLines(output)
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		matches := re.FindAllStringSubmatchIndex(line, -1)
		for m := len(matches) - 1; m >= 0; m-- {
			start, end := matches[m][2*group], matches[m][2*group+1]
			if start < 0 {
				continue
			}
			raw := strings.TrimSpace(line[start:end])
			if n := scanNumber(raw); n == 0 || n != len(raw) {
				continue
			}
			f, _ := numberValue(raw)
			return Value{Name: name, Value: f, Raw: raw, Line: line}, true
		}
	}
	return Value{}, false
}

// lastReadingOf returns the rightmost reading of name on line.
func lastReadingOf(line, name string) (Value, bool) {
	end := len(line)
	for {
		i := strings.LastIndex(line[:end], name)
		if i < 0 {
			return Value{}, false
		}
		if v, ok := readingAt(line, i, name); ok {
			return v, true
		}
		// Occurrences may overlap ("aa" in "aaa"), so only drop the last byte.
		end = i + len(name) - 1
	}
}

// readingAt reads `name: number` with name starting at line[i].
func readingAt(line string, i int, name string) (Value, bool) {
	var quote byte
	if i > 0 {
		switch c := line[i-1]; {
		case isTokenChar(c):
			return Value{}, false
		case isQuote(c):
			quote = c
		}
	}
	j := i + len(name)
	if quote != 0 && j < len(line) && line[j] == quote {
		j++
	}
	return numberAfterSeparator(line, j, name)
}

// pairs returns every `key: number` reading on line, left to right.
func pairs(line string) []Value {
	var values []Value
	for sep := 0; sep < len(line); sep++ {
		if line[sep] != ':' && line[sep] != '=' {
			continue
		}
		end := skipBlanksBack(line, sep)
		var quote byte
		if end > 0 && isQuote(line[end-1]) {
			quote = line[end-1]
			end--
		}
		start := end
		for start > 0 && isTokenChar(line[start-1]) {
			start--
		}
		if start == end || !isNameStart(line[start]) {
			continue
		}
		if quote != 0 && (start == 0 || line[start-1] != quote) {
			continue
		}
		if v, ok := numberAfterSeparator(line, sep, line[start:end]); ok {
			values = append(values, v)
		}
	}
	return values
}

// numberAfterSeparator reads `: number` or `= number` starting at line[j],
// blanks allowed around the separator.
func numberAfterSeparator(line string, j int, name string) (Value, bool) {
	j = skipBlanks(line, j)
	if j >= len(line) || (line[j] != ':' && line[j] != '=') {
		return Value{}, false
	}
	j = skipBlanks(line, j+1)
	n := scanNumber(line[j:])
	if n == 0 || !endsNumber(line, j+n) {
		return Value{}, false
	}
	raw := line[j : j+n]
	f, _ := numberValue(raw)
	return Value{Name: name, Value: f, Raw: raw, Line: line}, true
}

func splitLines(output string) []string {
	return strings.FieldsFunc(output, func(r rune) bool { return r == '\n' || r == '\r' })
}

func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func skipBlanksBack(s string, i int) int {
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return i
}

// isTokenChar reports whether c can be part of a metric name. Besides
// identifier characters it includes the separators of namespaced names
// (train/loss, eval.loss, val-loss) and any non-ASCII byte.
func isTokenChar(c byte) bool {
	return isWordChar(c) || c == '.' || c == '/' || c == '-'
}

func isWordChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c >= 0x80
}

func isNameStart(c byte) bool {
	return isLetter(c) || c == '_'
}

func isLetter(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isDigit(c byte) bool {
	return '0' <= c && c <= '9'
}

func isQuote(c byte) bool {
	return c == '"' || c == '\''
}
