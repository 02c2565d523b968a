package supervisor

import (
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// ReadTrainLog reads what a training log says besides its exit code: a
// divergence (FAIL or a NaN loss), the last loss, and the peak memory as
// memory_gb, or peak_vram_mb as karpathy's train.py prints it. The result's
// ProcessResult is left to the caller.
func ReadTrainLog(log string) steps.TrainResult {
	res := steps.TrainResult{Divergence: metric.Divergence(log)}
	values := metric.All(log)
	for _, name := range []string{"loss", "train_loss"} {
		if v, ok := values[name]; ok {
			res.FinalLoss = v.Raw
		}
	}
	if v, ok := values["memory_gb"]; ok {
		res.MemoryGB = v.Raw
	} else if v, ok := values["peak_vram_mb"]; ok {
		res.MemoryGB = metric.Format(v.Value / 1024)
	}
	return res
}

// ReadEvalLog finds the metric in an evaluation log, as printed last, with
// the protocol's pattern when it has one, and the readings named, as
// printed last. The result's ProcessResult is left to the caller. The error
// is for a pattern that does not compile.
func ReadEvalLog(log, name, pattern string, readings []string) (steps.EvalResult, error) {
	v, ok, err := metric.Find(log, name, pattern)
	if err != nil {
		return steps.EvalResult{}, err
	}
	res := steps.EvalResult{Found: ok, Value: v.Raw}
	if len(readings) > 0 {
		all := metric.All(log)
		for _, r := range readings {
			if v, ok := all[r]; ok {
				if res.Readings == nil {
					res.Readings = map[string]string{}
				}
				res.Readings[r] = v.Raw
			}
		}
	}
	return res, nil
}

// ChangedFixedFiles returns, sorted, the fixed files under the experiment
// directory dir whose SHA-256 is no longer the one in want, path → hex. It
// needs no git: the evaluation runs it in the user's image, which may have
// none.
func ChangedFixedFiles(dir string, want map[string]string) ([]string, error) {
	return (&workspace.Workspace{Dir: dir}).VerifyHashes(want)
}
