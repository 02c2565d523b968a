package round

import (
	"math"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"k8s.io/utils/ptr"
)

// addUsage adds a Researcher's reported consumption to the experiment's.
// The Researcher reports it: a negative count or cost would take back what
// the rounds before used, and a cost that is no finite number would make
// the total one, which no budget stops; each counts as nothing, and a
// count stops at the largest there is.
func (e *engine) addUsage(u v1alpha1.Usage) {
	e.st.Usage.InputTokens = addCount(e.st.Usage.InputTokens, u.InputTokens)
	e.st.Usage.OutputTokens = addCount(e.st.Usage.OutputTokens, u.OutputTokens)
	if u.Cost != "" {
		c := decimalOrZero(u.Cost)
		if !(c >= 0) || math.IsInf(c, 0) {
			c = 0
		}
		e.st.Usage.Cost = decimal(decimalOrZero(e.st.Usage.Cost) + c)
	}
}

// addCount is total plus n, for n that is not negative, saturating.
func addCount(total, n int64) int64 {
	if n <= 0 {
		return total
	}
	if total > math.MaxInt64-n {
		return math.MaxInt64
	}
	return total + n
}

// addGPUTime counts a training or evaluation run on spec.train.gpus GPUs.
func (e *engine) addGPUTime(d time.Duration) {
	e.st.Usage.GPUSeconds += int64(ptr.Deref(e.spec.Train.GPUs, 0)) * int64(d.Round(time.Second)/time.Second)
}

// gpusInUse is the number of GPUs the pods of the current round's GPU
// steps ask for: spec.train.gpus for each candidate in training,
// evaluation or the holdout. A round spec.pipeline started early runs none.
func gpusInUse(spec *v1alpha1.AutoResearchSpec, st *v1alpha1.AutoResearchStatus) int32 {
	var n int32
	for _, a := range roundActions(spec, st, st.CurrentRound) {
		switch a.Type {
		case ActionRunTrain, ActionRunEval, ActionRunHoldout:
			n += ptr.Deref(spec.Train.GPUs, 0)
		}
	}
	return n
}
