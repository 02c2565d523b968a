package round

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// judge compares a candidate with the best: improved only when it beats the
// best by more than max(minDelta, noiseFactor × baseline stddev). spread is
// the candidate's own standard deviation over its runs, 0 for one run.
func (e *engine) judge(value, best, spread float64) (v1alpha1.Verdict, string) {
	name := e.spec.Eval.Metric
	better := value < best
	if e.spec.Eval.Direction == v1alpha1.DirectionMaximize {
		better = value > best
	}
	// Decimal inputs such as 1.0 and 0.98 must not differ by float residue.
	delta, _ := strconv.ParseFloat(strconv.FormatFloat(math.Abs(value-best), 'g', 12, 64), 64)
	margin := e.noiseMargin(spread)
	bestText := fmt.Sprintf("%s (R%d)", e.st.Best.Value, e.st.Best.Round)
	switch {
	case better && delta > margin:
		return v1alpha1.VerdictImproved, fmt.Sprintf("%s improved from %s by %s", name, bestText, significant(delta))
	case better:
		return v1alpha1.VerdictWithinNoise, fmt.Sprintf("%s=%s beats the best %s by only %s, within the noise margin %s (max of minDelta, noiseFactor × %s and minImprovement × best); kept out as noise",
			name, metric.Format(value), bestText, significant(delta), significant(margin), noiseText(spread))
	default:
		return v1alpha1.VerdictNotImproved, fmt.Sprintf("%s=%s is no better than the best %s; the change did not help", name, metric.Format(value), bestText)
	}
}

// confirmedValue is what a candidate measured in several runs counts as:
// the mean of its runs, or its first run where that is worse. The hidden
// holdout measures the first run's outputs, so that no run after it can
// raise the value above what the holdout saw.
func (e *engine) confirmedValue(runs []string) string {
	mean, _ := meanStddev(runs)
	first, _ := metric.ParseDecimal(runs[0])
	if e.spec.Eval.Direction == v1alpha1.DirectionMaximize {
		return decimal(min(mean, first))
	}
	return decimal(max(mean, first))
}

// judgeCandidate judges c on its value against the best, with the spread
// of its runs where spec.acceptance.confirmRuns measured it again.
func (e *engine) judgeCandidate(c *v1alpha1.CandidateStatus) (v1alpha1.Verdict, string) {
	best, _ := metric.ParseDecimal(e.st.Best.Value)
	value, _ := metric.ParseDecimal(c.Value)
	if len(c.Values) < 2 {
		return e.judge(value, best, 0)
	}
	_, stddev := meanStddev(c.Values)
	verdict, insight := e.judge(value, best, stddev)
	return verdict, fmt.Sprintf("%s (%d runs: %s; stddev %s)", insight, len(c.Values), strings.Join(c.Values, ", "), decimal(stddev))
}

func noiseText(spread float64) string {
	if spread > 0 {
		return "the larger of the baseline's and the candidate's stddev"
	}
	return "baseline stddev"
}

// noiseMargin is how much a candidate whose runs spread that much must
// beat the best by.
func (e *engine) noiseMargin(spread float64) float64 {
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
	return max(minDelta, factor*max(stddev, spread), ratio)
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
