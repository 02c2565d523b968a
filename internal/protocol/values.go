package protocol

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

var (
	// metricName is the API's pattern for spec.eval.metric.
	metricName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*$`)
	// metricValue reads `val_bpb = 0.998`, `val_bpb: 0.998`, `val_acc >= 0.9`
	// and a bare `0.998`.
	metricValue  = regexp.MustCompile(`^(?:([A-Za-z_][A-Za-z0-9_.\-/]*)\s*(?:=|:|>=|<=|>|<|≥|≤)\s*)?(\S+)$`)
	trailingNote = regexp.MustCompile(`\s*[(（][^()（）]*[)）]\s*$`)
	durationPart = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([^\d\s.]*)\s*`)
	nonSlug      = regexp.MustCompile(`[^a-z0-9]+`)
)

// noneWords are the values that say a field deliberately has no value.
var noneWords = map[string]bool{
	"none": true, "null": true, "n/a": true, "na": true, "-": true, "—": true,
	"no": true, "no target": true, "unlimited": true, "no limit": true, "无": true, "不限": true,
}

// stripNote removes trailing parenthesised notes: "5min (whichever first)".
func stripNote(v string) string {
	for {
		s := trailingNote.ReplaceAllString(v, "")
		if s == v {
			return strings.TrimSpace(s)
		}
		v = s
	}
}

func isNone(v string) bool {
	return noneWords[strings.ToLower(strings.TrimSpace(v))]
}

var durationUnits = map[string]time.Duration{
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond, "毫秒": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second, "秒": time.Second, "秒钟": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute, "分": time.Minute, "分钟": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour, "小时": time.Hour, "时": time.Hour,
}

// parseDuration reads the durations protocol files use: Go durations
// ("2m30s", "300s"), "5min", "1 hour", "90 seconds" and "5分钟". A bare
// number is seconds; unitless reports that so that the caller can say so.
func parseDuration(v string) (d time.Duration, unitless bool, err error) {
	s := strings.ToLower(stripNote(v))
	if s == "" {
		return 0, false, errors.New("empty duration")
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n <= 0 {
			return 0, true, fmt.Errorf("%q is not a positive duration", v)
		}
		return time.Duration(n * float64(time.Second)), true, nil
	}
	for rest := s; rest != ""; {
		m := durationPart.FindStringSubmatch(rest)
		if m == nil {
			return 0, false, fmt.Errorf("%q is not a duration", v)
		}
		unit, ok := durationUnits[m[2]]
		if !ok {
			return 0, false, fmt.Errorf("%q is not a duration", v)
		}
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, false, fmt.Errorf("%q is not a duration", v)
		}
		d += time.Duration(n * float64(unit))
		rest = rest[len(m[0]):]
	}
	if d <= 0 {
		return 0, false, fmt.Errorf("%q is not a positive duration", v)
	}
	return d, false, nil
}

// parseCount reads a non-negative integer such as max_rounds or epoch_limit.
func parseCount(v string) (int32, error) {
	n, err := strconv.ParseInt(stripNote(v), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number", v)
	}
	return int32(n), nil
}

// parseMetricValue reads `<metric> = <value>` or a bare value. metric is
// empty when the text names none.
func parseMetricValue(v string) (metric, value string, err error) {
	m := metricValue.FindStringSubmatch(stripNote(v))
	if m == nil || v1alpha1.Decimal(m[2]).Validate(nil) != nil {
		return "", "", fmt.Errorf("%q is not a number, nor <metric> = <number>", v)
	}
	return m[1], m[2], nil
}

// parseDirection accepts maximize and minimize in their usual spellings.
func parseDirection(v string) (v1alpha1.Direction, error) {
	switch strings.ToLower(stripNote(v)) {
	case "maximize", "maximise", "max", "higher", "higher is better", "larger is better":
		return v1alpha1.DirectionMaximize, nil
	case "minimize", "minimise", "min", "lower", "lower is better", "smaller is better":
		return v1alpha1.DirectionMinimize, nil
	}
	return "", fmt.Errorf("%q is neither maximize nor minimize", v)
}

// slug turns a title into a DNS-1123 label: lower case, runs of anything
// but [a-z0-9] become one dash, at most 63 characters.
func slug(title string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(title), "-"), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}
