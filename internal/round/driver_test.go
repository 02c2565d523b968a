package round

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/builder"
	"github.com/autoresearch-dev/autoresearch-operator/internal/schema"
)

const (
	startCommit = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
	// The durations the driver's successful processes report.
	researcherTime = 90 * time.Second
	trainTime      = 2 * time.Minute
	evalTime       = 30 * time.Second
)

var (
	t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	// tObs is when the observation under test arrives; setup steps happen
	// earlier, a minute apart.
	tObs = t0.Add(24 * time.Hour)

	// ignoreRecordTimes leaves durations, times and timelines out of
	// Record comparisons; TestNextRecordCarriesDurations checks them once.
	ignoreRecordTimes = cmpopts.IgnoreFields(v1alpha1.RoundRecord{}, "Durations", "StartTime", "CompletionTime", "Timeline")
	// ignoreTasks leaves what actions carry for the adapters out of action
	// comparisons: TestRoundTasksOfFinishedRound checks the final task
	// list, TestCurrentAction the prompt and the ledger.
	ignoreTasks = cmpopts.IgnoreFields(Action{}, "Tasks", "Prompt", "Ledger")
)

// testSpec is a minimal valid protocol: minimize val_bpb over ten rounds,
// with the baseline measured once in round 0.
func testSpec() *v1alpha1.AutoResearchSpec {
	return builder.MakeAutoResearch("demo", "").
		Fixed("prepare.py").Train("uv run train.py", "").Eval("uv run eval.py").Researcher("researcher", "").
		SpecObj()
}

// givenBaseline sets a known baseline of 1.0, so that round 1 starts right
// after the one preflight run of round 0.
func givenBaseline(s *v1alpha1.AutoResearchSpec) {
	s.Baseline = &v1alpha1.BaselineSpec{Value: "1.0"}
}

// driver plays an adapter: it feeds observations to Next one at a time and
// keeps the resulting status.
type driver struct {
	t    *testing.T
	spec *v1alpha1.AutoResearchSpec
	gen  int64
	now  time.Time
	st   v1alpha1.AutoResearchStatus
	// seen is every action Next returned.
	seen []Action
}

func newDriver(t *testing.T, mutate ...func(*v1alpha1.AutoResearchSpec)) *driver {
	t.Helper()
	spec := testSpec()
	for _, m := range mutate {
		m(spec)
	}
	if err := schema.DefaultSpec(spec); err != nil {
		t.Fatal(err)
	}
	return &driver{t: t, spec: spec, gen: 1, now: t0}
}

// next feeds one observation and returns the actions; the clock moves on a
// minute per call.
func (d *driver) next(obs Observation) []Action {
	d.t.Helper()
	out := Next(Input{Spec: d.spec, Status: d.st, Generation: d.gen, Observation: obs, Now: d.now})
	d.st = out.Status
	d.seen = append(d.seen, out.Actions...)
	d.now = d.now.Add(time.Minute)
	return out.Actions
}

// start prepares the workspace, after which round 0 or, with a given
// baseline, round 1 is running: the given baseline's preflight run
// measures the given value. It returns the last observation's actions.
func (d *driver) start() []Action {
	d.t.Helper()
	d.next(tick())
	acts := d.next(workspaceReady())
	if b := d.spec.Baseline; b != nil && b.Value != "" {
		d.next(trained(0))
		acts = d.next(evaluated(0, string(b.Value)))
	}
	return acts
}

// preflightTrained prepares the workspace and trains round 0's one run,
// which is to be evaluated.
func preflightTrained(d *driver) {
	d.t.Helper()
	d.next(tick())
	d.next(workspaceReady())
	d.next(trained(0))
}

// current is the number of the round in progress.
func (d *driver) current() int32 {
	d.t.Helper()
	if d.st.CurrentRound == nil {
		d.t.Fatalf("no round in progress (phase %s: %s)", d.st.Phase, d.st.Message)
	}
	return d.st.CurrentRound.Number
}

// advanceTo feeds successful results until step is the current round's
// running step.
func (d *driver) advanceTo(step v1alpha1.Step) {
	d.t.Helper()
	for d.st.CurrentRound == nil || d.st.CurrentRound.Step != step {
		n := d.current()
		switch d.st.CurrentRound.Step {
		case v1alpha1.StepResearcher:
			d.next(researched(n, fmt.Sprintf("strategy %d", n)))
		case v1alpha1.StepCompliance:
			d.next(compliant(n))
		case v1alpha1.StepTrain:
			d.next(trained(n))
		default:
			d.t.Fatalf("cannot advance from R%d %s to %s", n, d.st.CurrentRound.Step, step)
		}
	}
	if d.st.CurrentRound.StepState != v1alpha1.StepStateRunning {
		d.t.Fatalf("R%d %s is %s, want Running", d.current(), step, d.st.CurrentRound.StepState)
	}
}

// evaluate runs the current round up to the verdict on value.
func (d *driver) evaluate(value string) []Action {
	d.t.Helper()
	d.advanceTo(v1alpha1.StepEval)
	return d.next(evaluated(d.current(), value))
}

// round runs the current round to its end with value as the metric. An
// improved round commits commitOf(n).
func (d *driver) round(value string) {
	d.t.Helper()
	n := d.current()
	acts := d.evaluate(value)
	if len(acts) == 0 {
		d.t.Fatalf("R%d: no git action after the verdict", n)
	}
	if acts[len(acts)-1].Type == ActionCommit {
		d.next(committed(n, commitOf(n)))
		return
	}
	d.next(rolledBack(n))
}

// commitOf is the commit the driver reports for round n's improvement.
func commitOf(n int32) string { return fmt.Sprintf("abc%04d%033d", n, n) }

func tick() Observation    { return Observation{Kind: ObserveTick} }
func resumed() Observation { return Observation{Kind: ObserveResumed} }

func workspaceReady() Observation {
	return Observation{Kind: ObserveWorkspaceReady, Workspace: &WorkspaceResult{
		Path: "/work/autoresearch-demo", Branch: "autoresearch/demo", StartCommit: startCommit,
		FixedHashes: []v1alpha1.FileHash{{Path: "prepare.py", SHA256: "e3b0c442"}},
	}}
}

func researched(n int32, strategy string) Observation {
	return researcherExit(n, strategy, ProcessExit{Duration: researcherTime})
}

func researcherExit(n int32, strategy string, exit ProcessExit) Observation {
	return Observation{Kind: ObserveResearcherFinished, Round: n, Researcher: &ResearcherResult{Exit: exit, Strategy: strategy}}
}

func compliant(n int32) Observation { return compliance(n, ComplianceResult{}) }

func compliance(n int32, r ComplianceResult) Observation {
	return Observation{Kind: ObserveComplianceChecked, Round: n, Compliance: &r}
}

func trained(n int32) Observation {
	return train(n, TrainResult{Exit: ProcessExit{Duration: trainTime}})
}

func train(n int32, r TrainResult) Observation {
	return Observation{Kind: ObserveTrainFinished, Round: n, Train: &r}
}

func evaluated(n int32, value string) Observation {
	return eval(n, EvalResult{Exit: ProcessExit{Duration: evalTime}, Found: true, Value: value})
}

func eval(n int32, r EvalResult) Observation {
	return Observation{Kind: ObserveEvalFinished, Round: n, Eval: &r}
}

func committed(n int32, commit string) Observation {
	return Observation{Kind: ObserveCommitted, Round: n, Commit: commit}
}

func rolledBack(n int32) Observation { return Observation{Kind: ObserveRolledBack, Round: n} }

// conditions summarises the status's conditions as "Status/Reason" by type.
func conditions(st v1alpha1.AutoResearchStatus, types ...string) map[string]string {
	out := map[string]string{}
	for _, t := range types {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			out[t] = string(c.Status) + "/" + c.Reason
		}
	}
	return out
}

func timeAt(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

func microAt(t time.Time) *metav1.MicroTime { return &metav1.MicroTime{Time: t} }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
