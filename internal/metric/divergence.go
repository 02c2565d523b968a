package metric

import (
	"fmt"
	"math"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// maxQuoteLen bounds how many bytes of an offending line a divergence reason quotes.
const maxQuoteLen = 200

// Divergence reports why a training log shows a failed run even though the
// process exited 0, or "" when it shows none. A run failed when a line is
// FAIL or starts with "FAIL " or "FAIL:" (train.py prints FAIL when its loss
// explodes), or when a pair whose name contains "loss", in any letter case,
// has a NaN or infinite value (`loss: nan`, `train_loss=inf`). The reason
// quotes the first offending line, cut to 200 characters.
func Divergence(output string) string {
	for _, line := range splitLines(output) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "FAIL" || strings.HasPrefix(trimmed, "FAIL ") || strings.HasPrefix(trimmed, "FAIL:") || strings.HasPrefix(trimmed, "FAIL\t") {
			return fmt.Sprintf("training printed FAIL: %q", text.Truncate(trimmed, maxQuoteLen))
		}
		for _, v := range pairs(line) {
			if !strings.Contains(strings.ToLower(v.Name), "loss") {
				continue
			}
			if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
				return fmt.Sprintf("%s is %s: %q", v.Name, v.Raw, text.Truncate(trimmed, maxQuoteLen))
			}
		}
	}
	return ""
}
