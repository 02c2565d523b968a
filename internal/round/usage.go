package round

import (
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"k8s.io/utils/ptr"
)

// addUsage adds a Researcher's reported consumption to the experiment's.
func (e *engine) addUsage(u v1alpha1.Usage) {
	e.st.Usage.InputTokens += u.InputTokens
	e.st.Usage.OutputTokens += u.OutputTokens
	if u.Cost != "" {
		e.st.Usage.Cost = decimal(decimalOrZero(e.st.Usage.Cost) + decimalOrZero(u.Cost))
	}
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
