package round

import (
	"fmt"
	"math"
	"strconv"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// judge compares a candidate with the best: improved only when it beats the
// best by more than max(minDelta, noiseFactor × baseline stddev).
func (e *engine) judge(value, best float64) (v1alpha1.Verdict, string) {
	name := e.spec.Eval.Metric
	better := value < best
	if e.spec.Eval.Direction == v1alpha1.DirectionMaximize {
		better = value > best
	}
	// Decimal inputs such as 1.0 and 0.98 must not differ by float residue.
	delta, _ := strconv.ParseFloat(strconv.FormatFloat(math.Abs(value-best), 'g', 12, 64), 64)
	margin := e.noiseMargin()
	bestText := fmt.Sprintf("%s (R%d)", e.st.Best.Value, e.st.Best.Round)
	switch {
	case better && delta > margin:
		return v1alpha1.VerdictImproved, fmt.Sprintf("%s improved from %s by %s", name, bestText, significant(delta))
	case better:
		return v1alpha1.VerdictWithinNoise, fmt.Sprintf("%s=%s beats the best %s by only %s, within the noise margin %s (max of minDelta, noiseFactor × baseline stddev and minImprovement × best); kept out as noise",
			name, metric.Format(value), bestText, significant(delta), significant(margin))
	default:
		return v1alpha1.VerdictNotImproved, fmt.Sprintf("%s=%s is no better than the best %s; the change did not help", name, metric.Format(value), bestText)
	}
}

// noiseMargin is how much a candidate must beat the best by.
func (e *engine) noiseMargin() float64 {
	a := e.spec.Acceptance
	minDelta := decimalOrZero(string(a.MinDelta))
	factor := decimalOrZero(string(a.NoiseFactor))
	stddev := 0.0
	if e.st.Baseline != nil {
		stddev = decimalOrZero(e.st.Baseline.Stddev)
	}
	ratio := 0.0
	if e.st.Best != nil {
		ratio = decimalOrZero(string(a.MinImprovement)) * math.Abs(decimalOrZero(e.st.Best.Value))
	}
	return max(minDelta, factor*stddev, ratio)
}

// targetReached reports whether a committed round reached spec.target.
func targetReached(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) bool {
	if spec.Target == "" || st.Best == nil || st.Best.Round == 0 {
		return false
	}
	target, err := metric.ParseDecimal(string(spec.Target))
	if err != nil {
		return false
	}
	best, err := metric.ParseDecimal(st.Best.Value)
	if err != nil {
		return false
	}
	if spec.Eval.Direction == v1alpha1.DirectionMaximize {
		return best >= target
	}
	return best <= target
}
