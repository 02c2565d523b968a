package round

import (
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// maxMessageLength is the API's limit on status.message.
const maxMessageLength = 2048

// significant formats a difference of two metric values to six significant
// digits, dropping the floating-point residue of the subtraction.
func significant(v float64) string { return roundedTo(v, 6) }

// decimal formats a sum or mean of decimal strings to 15 significant digits,
// which every such string of up to 15 digits survives unchanged, so that
// 0.1 + 0.2 reads 0.3 rather than 0.30000000000000004.
func decimal(v float64) string { return roundedTo(v, 15) }

func roundedTo(v float64, digits int) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	return metric.Format(r)
}

// decimalOrZero is the decimal s, or 0 when s is empty or not a number.
func decimalOrZero(s string) float64 {
	v, err := metric.ParseDecimal(s)
	if err != nil {
		return 0
	}
	return v
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func addDuration(old *metav1.Duration, d time.Duration) *metav1.Duration {
	if old == nil {
		return duration(d)
	}
	return duration(old.Duration + d)
}

// tail is ": " and the last line of a process's output, for an insight.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	return ": " + text.Truncate(strings.TrimSpace(lines[len(lines)-1]), 300)
}

func joinInsight(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
