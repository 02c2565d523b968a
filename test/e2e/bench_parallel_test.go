//go:build e2e

package e2e

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/scripted"
)

// The parallel benchmark (make bench-parallel) runs a synthetic experiment
// for every cell of a matrix — spec.candidates K, spec.pipeline on or off,
// the Researcher's time R — and reports, from each experiment's status,
// how busy the node's GPUs were and where the time between user processes
// went. It reports; it asserts no timing.

// benchTrainingBudget is the training time the throughput is extrapolated
// to.
const benchTrainingBudget = 5 * time.Minute

// benchKnobWorth is what the best setting of one knob adds to the score.
const benchKnobWorth = 25

// benchOffsets are how far from the best setting the candidates of a round
// set its knob: candidate k of round r takes offset (k + r - 1) mod 8, so
// a lone candidate improves in some rounds and not in others, and eight
// always find the best setting.
var benchOffsets = []int{3, -6, 6, -2, 4, -4, 1, 0}

// benchSettings are the matrix and its simulated times, from the
// environment.
type benchSettings struct {
	train      time.Duration
	research   []time.Duration
	rounds     int
	candidates []int
	target     int
}

func benchSettingsFromEnv() (benchSettings, error) {
	train, errT := envValue("BENCH_PARALLEL_T", 10*time.Second, time.ParseDuration)
	research, errR := envList("BENCH_PARALLEL_R", []time.Duration{train / 2, train}, time.ParseDuration)
	rounds, errRounds := envValue("BENCH_PARALLEL_ROUNDS", 3, strconv.Atoi)
	candidates, errK := envList("BENCH_PARALLEL_K", []int{1, 4, 8}, strconv.Atoi)
	target, errTarget := envValue("BENCH_PARALLEL_TARGET", benchKnobWorth*((rounds+1)/2), strconv.Atoi)
	s := benchSettings{train: train, research: research, rounds: rounds, candidates: candidates, target: target}
	if err := errors.Join(errT, errR, errRounds, errK, errTarget); err != nil {
		return s, err
	}
	if s.train < time.Second || s.rounds < 1 || s.rounds > 99 {
		return s, fmt.Errorf("BENCH_PARALLEL_T %s and BENCH_PARALLEL_ROUNDS %d: T must be at least 1s and rounds 1 to 99", s.train, s.rounds)
	}
	for _, r := range s.research {
		// The experiments are named by R in seconds.
		if r < 0 || r%time.Second != 0 {
			return s, fmt.Errorf("BENCH_PARALLEL_R %s: R must be whole seconds", r)
		}
	}
	for _, k := range s.candidates {
		// status.history keeps at most 100 records besides the baseline's.
		if k < 1 || k > 16 || k*s.rounds > 100 {
			return s, fmt.Errorf("BENCH_PARALLEL_K %d: K must be 1 to 16, and K × rounds (%d) at most 100", k, k*s.rounds)
		}
	}
	return s, nil
}

// envValue is the environment variable k parsed, or def when it is unset.
func envValue[T any](k string, def T, parse func(string) (T, error)) (T, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	x, err := parse(v)
	if err != nil {
		return def, fmt.Errorf("%s: %w", k, err)
	}
	return x, nil
}

// envList is the comma-separated values of the environment variable k,
// or def when it is unset.
func envList[T any](k string, def []T, parse func(string) (T, error)) ([]T, error) {
	return envValue(k, def, func(v string) ([]T, error) {
		var out []T
		for f := range strings.SplitSeq(v, ",") {
			x, err := parse(strings.TrimSpace(f))
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	})
}

// benchCell is one experiment of the matrix.
type benchCell struct {
	candidates int
	pipeline   bool
	research   time.Duration
}

func (c benchCell) String() string {
	mode := "sequential"
	if c.pipeline {
		mode = "pipelined"
	}
	return fmt.Sprintf("K=%d %s R=%s", c.candidates, mode, c.research)
}

func (c benchCell) name() string {
	mode := "seq"
	if c.pipeline {
		mode = "pipe"
	}
	return fmt.Sprintf("bench-k%d-%s-r%d", c.candidates, mode, int(c.research.Seconds()))
}

func benchKnob(round int) string { return fmt.Sprintf("X%02d", round) }

// benchToy is the synthetic experiment: train.sh holds one knob per round,
// each worth benchKnobWorth - (knob - 5)², so the score of the untouched
// code is 0; the knobs lie apart, so that a round started early merges
// onto the best its predecessor committed. The scripted Researcher sleeps
// R, then sets its round's knob.
func benchToy(s benchSettings, c benchCell) (map[string]string, error) {
	var train, score strings.Builder
	train.WriteString("#!/bin/sh\n# One knob per round; the score is the sum of the knobs' worth.\n")
	for r := 1; r <= s.rounds; r++ {
		fmt.Fprintf(&train, "\n# round %d's knob\n%s=0\n", r, benchKnob(r))
		fmt.Fprintf(&score, " + %d - (%s-5)*(%s-5)", benchKnobWorth, benchKnob(r), benchKnob(r))
	}
	fmt.Fprintf(&train, "\necho $((0%s)) > out.txt\n", score.String())

	var plan scripted.Plan
	for r := 1; r <= s.rounds; r++ {
		steps := make([]scripted.Step, c.candidates)
		for k := range steps {
			v := 5 + benchOffsets[(k+r-1)%len(benchOffsets)]
			steps[k] = scripted.Step{
				Strategy: fmt.Sprintf("set %s to %d", benchKnob(r), v),
				Edits:    []scripted.Edit{{File: "train.sh", Old: benchKnob(r) + "=0", New: fmt.Sprintf("%s=%d", benchKnob(r), v)}},
				Sleep:    metav1.Duration{Duration: c.research},
			}
		}
		round := steps[0]
		if c.candidates > 1 {
			round.Candidates = steps
		}
		plan.Rounds = append(plan.Rounds, round)
	}
	data, err := yaml.Marshal(plan)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		".gitignore": "out.txt\n",
		"train.sh":   train.String(),
		"eval.sh":    "#!/bin/sh\ntest -f out.txt || { echo 'no model' >&2; exit 1; }\necho \"score: $(cat out.txt)\"\n",
		"plan.yaml":  string(data),
	}, nil
}

// benchManifest trains for T in every round, the baseline's too, as a
// real experiment does: with spec.pipeline, round 1 researches meanwhile.
func benchManifest(s benchSettings, c benchCell, repo string) string {
	return fmt.Sprintf(`apiVersion: autoresearch.dev/v1alpha1
kind: AutoResearch
metadata: {name: %s, namespace: %s}
spec:
  researchQuestion: "Which knob settings raise the synthetic score?"
  maxRounds: %d
  candidates: %d
  pipeline: %t
  historyLimit: 100
  baseline: {runs: 1}
  source:
    git: {url: "file://%s", ref: main}
  workspace: {size: 1Gi}
  fixed:
    files: [eval.sh, plan.yaml]
    timeLimit: %s
  variable:
    files: [train.sh]
  train:
    command: "sleep %g; ./train.sh"
    outputs: [out.txt]
    gpus: 1
  eval:
    metric: score
    direction: maximize
    command: "./eval.sh"
  researcher:
    command: "autoresearch researcher scripted --plan plan.yaml"
    timeout: %s
`, c.name(), ns, s.rounds, c.candidates, c.pipeline, repo, s.train+30*time.Second, s.train.Seconds(), c.research+time.Minute)
}

// TestBenchParallel is make bench-parallel: it runs only with
// BENCH_PARALLEL=1, on a cluster whose node has the GPUs for the largest K.
func TestBenchParallel(t *testing.T) {
	if os.Getenv("BENCH_PARALLEL") != "1" {
		t.Skip("the parallel benchmark runs with BENCH_PARALLEL=1 (make bench-parallel)")
	}
	s, err := benchSettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	gpus := clusterGPUs(t)
	install(t)
	m := &manager{t: t}
	m.start()
	defer m.stop()

	start := time.Now()
	var reports []cellReport
	for _, k := range s.candidates {
		for _, pipeline := range []bool{false, true} {
			for _, r := range s.research {
				c := benchCell{candidates: k, pipeline: pipeline, research: r}
				rep := runBenchCell(t, s, c)
				t.Logf("%s: %s", c.name(), rep.summary)
				reports = append(reports, rep)
			}
		}
	}
	table := benchTable(s, gpus, time.Since(start), reports)
	fmt.Print(table)
	out := envOr("BENCH_PARALLEL_OUT", filepath.Join(root, "bin/bench-parallel.md"))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

// clusterGPUs is how many GPUs the cluster's nodes offer.
func clusterGPUs(t *testing.T) int {
	out := kubectl(t, "", "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}`)
	n := 0
	for f := range strings.FieldsSeq(out) {
		g, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("a node offers %q GPUs", f)
		}
		n += g
	}
	if n == 0 {
		t.Fatal("no node offers nvidia.com/gpu")
	}
	return n
}

// runBenchCell runs one experiment to its end, reads its report from the
// status and deletes it, so that the next cell has the node to itself.
func runBenchCell(t *testing.T, s benchSettings, c benchCell) cellReport {
	files, err := benchToy(s, c)
	if err != nil {
		t.Fatal(err)
	}
	repo := toyRepo(t, files)
	n := c.name()
	before := apiWrites(t)
	kubectl(t, benchManifest(s, c, repo), "apply", "-f", "-")
	// Polled seldom: the times come from the status, not from the poll.
	deadline := time.Now().Add(time.Duration(s.rounds)*(c.research+s.train+2*time.Minute) + 5*time.Minute)
	ar := experimentNamed(t, n)
	for ar.Status.Phase != v1alpha1.PhaseSucceeded && ar.Status.Phase != v1alpha1.PhaseFailed {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done by %s: phase %s: %s", n, deadline.Format(time.TimeOnly), ar.Status.Phase, ar.Status.Message)
		}
		time.Sleep(5 * time.Second)
		ar = experimentNamed(t, n)
	}
	writes := apiWrites(t)
	for k, v := range before {
		writes[k] -= v
	}
	rep, err := analyseCell(ar, c, s.train, s.target)
	if err != nil {
		t.Errorf("%s: %v", n, err)
	}
	rep.writes = writes
	t.Logf("%s: API writes by resource: %v", n, writes)
	if ar.Status.Phase == v1alpha1.PhaseFailed {
		t.Errorf("%s failed: %s", n, ar.Status.Message)
	}
	kubectl(t, "", "delete", "autoresearch", n, "-n", ns, "--wait=true", "--timeout=120s")
	eventually(t, n+"'s pods to go", 3*time.Minute, func() bool {
		return strings.TrimSpace(kubectl(t, "", "get", "pods", "-n", ns, "-l", "autoresearch.dev/experiment="+n, "-o", "name")) == ""
	})
	kubectl(t, "", "delete", "pvc", n+"-workspace", "-n", ns, "--ignore-not-found")
	return rep
}

// writeVerbs are the API server's verbs that change an object.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"}

// experimentResources are what an experiment makes and changes: its
// status, its children, their status and bindings, and the events about
// them. The nodes' heartbeats and the components' leases are not counted.
var experimentResources = []string{"autoresearches", "pods", "jobs", "configmaps", "persistentvolumeclaims", "persistentvolumes", "events"}

// apiWrites is how many writes the API server has answered so far, from
// every client (the operator, the Job controller, the scheduler and the
// node), by resource and subresource, read from its request counter.
func apiWrites(t *testing.T) map[string]int {
	t.Helper()
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	writes := map[string]int{}
	for line := range strings.Lines(kubectl(t, "", "get", "--raw", "/metrics")) {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		series, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		labels := map[string]string{}
		for _, m := range label.FindAllStringSubmatch(series, -1) {
			labels[m[1]] = m[2]
		}
		if !slices.Contains(writeVerbs, labels["verb"]) || !slices.Contains(experimentResources, labels["resource"]) {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("apiserver_request_total: %q: %v", line, err)
		}
		writes[strings.TrimSuffix(labels["resource"]+"/"+labels["subresource"], "/")] += int(n)
	}
	if len(writes) == 0 {
		t.Fatal("the API server's /metrics counted no write to pods, jobs or the experiments")
	}
	return writes
}

// handoffs is the time between user processes on the critical path,
// summed over a cell's rounds, by where it falls.
type handoffs struct {
	// researchCheck is the Researcher step less its longest process (its
	// pods' start and end), until the compliance check starts.
	researchCheck time.Duration
	// checkTrain is the compliance check, until training starts.
	checkTrain time.Duration
	// trainEval is the training step less its longest run (the Jobs'
	// pods' start and end), until evaluation starts.
	trainEval time.Duration
	// evalGit is the same for evaluation, until the commit or rollback
	// starts.
	evalGit time.Duration
	// gitNext is the commit or rollback, until the next round's
	// Researchers start, or with spec.pipeline its training (a check
	// again when the best moved), or the experiment ends.
	gitNext time.Duration
}

func (h handoffs) total() time.Duration {
	return h.researchCheck + h.checkTrain + h.trainEval + h.evalGit + h.gitNext
}

// roundTimes is what a round's records say about its time.
type roundTimes struct {
	round    int32
	timeline map[v1alpha1.Step]time.Time
	// research, train and eval are the longest candidate's: the step
	// waits for it.
	research, train, eval time.Duration
	// gpu is training and evaluation summed over the candidates.
	gpu       time.Duration
	evaluated int
	// improved is the value the round committed; "" when none.
	improved string
	verdicts []string
}

func (r roundTimes) at(s v1alpha1.Step) time.Time { return r.timeline[s] }

// roundsOf groups the records of rounds after the baseline by round.
func roundsOf(history []v1alpha1.RoundRecord) ([]roundTimes, error) {
	var rounds []roundTimes
	for _, h := range history {
		if h.Round == 0 {
			continue
		}
		if len(rounds) == 0 || rounds[len(rounds)-1].round != h.Round {
			rt := roundTimes{round: h.Round, timeline: map[v1alpha1.Step]time.Time{}}
			for _, s := range h.Timeline {
				rt.timeline[s.Step] = s.Time.Time
			}
			for _, s := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval, v1alpha1.StepGit} {
				if _, ok := rt.timeline[s]; !ok {
					return nil, fmt.Errorf("round %d's timeline has no %s step: %v", h.Round, s, h.Timeline)
				}
			}
			rounds = append(rounds, rt)
		}
		rt := &rounds[len(rounds)-1]
		d := h.Durations
		rt.research = max(rt.research, durationOf(d.Researcher))
		rt.train = max(rt.train, durationOf(d.Train))
		rt.eval = max(rt.eval, durationOf(d.Eval))
		rt.gpu += durationOf(d.Train) + durationOf(d.Eval)
		if d.Eval != nil {
			rt.evaluated++
		}
		if h.Verdict == v1alpha1.VerdictImproved {
			rt.improved = h.Value
		}
		rt.verdicts = append(rt.verdicts, string(h.Verdict))
	}
	if len(rounds) == 0 {
		return nil, errors.New("no round after the baseline has a record")
	}
	return rounds, nil
}

// baselineEnd is when the baseline was measured: its evaluation's end, or
// its record's completion, in whole seconds, when that is later.
func baselineEnd(history []v1alpha1.RoundRecord) (time.Time, error) {
	for _, h := range history {
		if h.Round != 0 || h.CompletionTime == nil {
			continue
		}
		end := h.CompletionTime.Time
		for _, s := range h.Timeline {
			if s.Step == v1alpha1.StepEval {
				end = later(end, s.Time.Add(durationOf(h.Durations.Eval)))
			}
		}
		return end, nil
	}
	return time.Time{}, errors.New("the history has no completed baseline")
}

func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// accounting is a cell's wall time split into user processes on the
// critical path and the handoffs between them.
type accounting struct {
	wall time.Duration
	// user is the time of user processes on the critical path: every
	// round's longest training and evaluation, and of its research what
	// the GPUs waited for.
	user     time.Duration
	handoffs handoffs
	// stretch is how much longer the wall would be with the training
	// budget, and the research time with it in proportion.
	stretch time.Duration
}

// account walks the critical path from start, when the baseline was
// measured, to end: a round trains once the round before is committed and
// its own candidates are checked. With spec.pipeline, a round's research and checks that ran
// while the round before trained are off that path; only what the GPUs
// then waited for counts. train and research are the simulated times,
// scaled to budget for the stretch.
func account(rounds []roundTimes, start, end time.Time, train, research, budget time.Duration) accounting {
	var a accounting
	growTrain := budget - train
	growResearch := time.Duration(float64(research) * (float64(budget)/float64(train) - 1))
	// prev is where the GPUs' critical path stands: the baseline's end,
	// then each round's commit.
	prev := start
	for _, r := range rounds {
		researchAt, check, trainAt := r.at(v1alpha1.StepResearcher), r.at(v1alpha1.StepCompliance), r.at(v1alpha1.StepTrain)
		var waited time.Duration
		if check.After(prev) {
			if researchAt.After(prev) {
				a.handoffs.gitNext += researchAt.Sub(prev)
			}
			from := later(prev, researchAt)
			waited = min(max(researchAt.Add(r.research).Sub(from), 0), r.research)
			a.user += waited
			a.handoffs.researchCheck += check.Sub(from) - waited
			a.handoffs.checkTrain += trainAt.Sub(check)
		} else {
			a.handoffs.gitNext += trainAt.Sub(prev)
		}
		if researchAt.Before(prev) {
			// Research that overlapped the round before's training
			// delays the GPUs only by what it outlasts that training by.
			a.stretch += max(waited+growResearch-growTrain, 0) - waited
		} else {
			a.stretch += growResearch
		}
		a.user += r.train + r.eval
		a.stretch += growTrain
		a.handoffs.trainEval += r.at(v1alpha1.StepEval).Sub(trainAt) - r.train
		a.handoffs.evalGit += r.at(v1alpha1.StepGit).Sub(r.at(v1alpha1.StepEval)) - r.eval
		prev = r.at(v1alpha1.StepGit)
	}
	a.handoffs.gitNext += end.Sub(prev)
	a.wall = end.Sub(start)
	return a
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// cellReport is one row of the table.
type cellReport struct {
	cell   benchCell
	rounds int
	accounting
	gpu         time.Duration
	experiments int
	best        string
	// reached is the first round whose best met the target; 0 when none.
	reached int32
	// writes are the API writes the cell caused, by resource.
	writes  map[string]int
	summary string
}

// analyseCell reads a finished experiment's report from its status. The
// experiment ends when its last round is recorded, in whole seconds.
func analyseCell(ar *v1alpha1.AutoResearch, c benchCell, train time.Duration, target int) (cellReport, error) {
	rep := cellReport{cell: c, summary: fmt.Sprintf("phase %s, verdicts %v", ar.Status.Phase, ar.Status.VerdictCounts)}
	rounds, err := roundsOf(ar.Status.History)
	if err != nil {
		return rep, err
	}
	last := ar.Status.History[len(ar.Status.History)-1]
	if last.CompletionTime == nil {
		return rep, fmt.Errorf("round %d's record has no completion time", last.Round)
	}
	end := later(last.CompletionTime.Time, rounds[len(rounds)-1].at(v1alpha1.StepGit))
	start, err := baselineEnd(ar.Status.History)
	if err != nil {
		return rep, err
	}
	rep.rounds = len(rounds)
	rep.accounting = account(rounds, start, end, train, c.research, benchTrainingBudget)
	best := math.Inf(-1)
	for _, r := range rounds {
		rep.gpu += r.gpu
		rep.experiments += r.evaluated
		if v, err := strconv.ParseFloat(r.improved, 64); err == nil && v > best {
			best, rep.best = v, r.improved
			if rep.reached == 0 && v >= float64(target) {
				rep.reached = r.round
			}
		}
	}
	return rep, nil
}

// benchTable is the report in Markdown.
func benchTable(s benchSettings, gpus int, elapsed time.Duration, reports []cellReport) string {
	var b strings.Builder
	b.WriteString("# make bench-parallel\n\n")
	fmt.Fprintf(&b, "Simulated training T = %s, rounds per cell %d, a node of %d GPUs; target best ≥ %d (the untouched code scores 0); the matrix took %s (%s).\n\n",
		s.train, s.rounds, gpus, s.target, elapsed.Round(time.Second), time.Now().UTC().Format(time.RFC3339))
	b.WriteString("Times in seconds; overhead and handoffs per round on the critical path; README.md, \"make bench-parallel\", says what each column means.\n\n")
	b.WriteString("| K | pipeline | R | wall | GPU busy (all) | GPU busy (K) | experiments | exp/GPU-h | exp/GPU-h at T=5m | rounds to target | best | overhead/round | research→check | check→train | train→eval | eval→git | git→next | API writes/round |\n")
	b.WriteString("|---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range reports {
		if r.rounds == 0 {
			fmt.Fprintf(&b, "| %d | %s | %g | no report: %s |%s\n", r.cell.candidates, yesNo(r.cell.pipeline), r.cell.research.Seconds(), r.summary, strings.Repeat(" |", 14))
			continue
		}
		perRound := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()/float64(r.rounds)) }
		reached := fmt.Sprintf("> %d", r.rounds)
		if r.reached > 0 {
			reached = fmt.Sprint(r.reached)
		}
		h := r.handoffs
		writes := 0
		for _, n := range r.writes {
			writes += n
		}
		fmt.Fprintf(&b, "| %d | %s | %g | %.1f | %.1f%% | %.1f%% | %d | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n",
			r.cell.candidates, yesNo(r.cell.pipeline), r.cell.research.Seconds(), r.wall.Seconds(),
			r.busy(gpus), r.busy(r.cell.candidates), r.experiments,
			r.perGPUHour(r.wall), r.perGPUHour(r.wall+r.stretch), reached, cmp.Or(r.best, "–"),
			perRound(h.total()), perRound(h.researchCheck), perRound(h.checkTrain), perRound(h.trainEval), perRound(h.evalGit), perRound(h.gitNext),
			float64(writes)/float64(r.rounds))
	}
	b.WriteString("\n## Goals\n\n")
	b.WriteString(benchGoals(s, gpus, reports))
	return b.String()
}

// busy is the percentage of gpus that the cell's training and evaluation
// kept busy over its wall time.
func (r cellReport) busy(gpus int) float64 {
	return 100 * r.gpu.Seconds() / (float64(gpus) * r.wall.Seconds())
}

// perGPUHour is how many candidates were evaluated per hour of the cell's
// K GPUs, had its rounds taken wall.
func (r cellReport) perGPUHour(wall time.Duration) float64 {
	return float64(r.experiments) / (float64(r.cell.candidates) * wall.Hours())
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// benchGoals sets what was measured beside the goals the benchmark is
// for; it tells, it does not fail.
func benchGoals(s benchSettings, gpus int, reports []cellReport) string {
	var full, all []cellReport
	for _, r := range reports {
		if r.rounds == 0 {
			continue
		}
		all = append(all, r)
		if r.cell.candidates == gpus && r.cell.pipeline && r.cell.research <= s.train {
			full = append(full, r)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- ≥ 90%% GPU busy with K = %d and spec.pipeline at R ≤ T: %s\n", gpus,
		goal(full, func(r cellReport) (float64, string) { return r.busy(gpus), "%.1f%%" }, func(v float64) bool { return v >= 90 }))
	fmt.Fprintf(&b, "- ≥ 11 experiments per GPU-hour at a 5-minute training budget, K = %d and spec.pipeline at R ≤ T: %s\n", gpus,
		goal(full, func(r cellReport) (float64, string) { return r.perGPUHour(r.wall + r.stretch), "%.1f" }, func(v float64) bool { return v >= 11 }))
	if len(full) > 0 {
		var ceilings []string
		for _, r := range full {
			ceilings = append(ceilings, fmt.Sprintf("%s %.1f", r.cell, ceilingPerGPUHour(r.rounds, r.cell, s.train, benchTrainingBudget)))
		}
		fmt.Fprintf(&b, "  - with no overhead at all, %d rounds would allow at most: %s (BENCH_PARALLEL_ROUNDS sets more)\n", s.rounds, strings.Join(ceilings, "; "))
	}
	fmt.Fprintf(&b, "- ≤ 3 s of overhead per round, every cell: %s\n",
		goal(all, func(r cellReport) (float64, string) {
			return r.handoffs.total().Seconds() / float64(r.rounds), "%.2f s"
		}, func(v float64) bool { return v <= 3 }))
	return b.String()
}

// ceilingPerGPUHour is the most experiments per GPU-hour that rounds of
// cell c allow at the training budget with no overhead at all, its
// research scaled as the stretch scales it: each round's candidates train
// on GPUs of their own for the budget, and the GPUs wait only for research
// that pipelining cannot hide, what outlasts a training (for round 1, the
// baseline's).
func ceilingPerGPUHour(rounds int, c benchCell, train, budget time.Duration) float64 {
	research := time.Duration(float64(c.research) * float64(budget) / float64(train))
	wall := time.Duration(rounds) * (research + budget)
	if c.pipeline {
		wall = max(research-budget, 0) + time.Duration(rounds)*max(research, budget)
	}
	return float64(rounds) / wall.Hours()
}

// goal says whether every report's value meets the goal, and each value.
func goal(reports []cellReport, value func(cellReport) (float64, string), ok func(float64) bool) string {
	if len(reports) == 0 {
		return "not measured"
	}
	verdict := "met"
	var values []string
	for _, r := range reports {
		v, format := value(r)
		if !ok(v) {
			verdict = "missed"
		}
		values = append(values, r.cell.String()+" "+fmt.Sprintf(format, v))
	}
	return verdict + ": " + strings.Join(values, "; ")
}

// TestBenchParallelAccounting checks the benchmark's arithmetic on made-up
// experiments: the handoffs and the user processes make up the
// wall time, with the research of a pipelined round off the critical path.
func TestBenchParallelAccounting(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	round := func(n int32, starts ...float64) roundTimes {
		r := roundTimes{round: n, timeline: map[v1alpha1.Step]time.Time{}, research: 10 * time.Second, train: 20 * time.Second, eval: time.Second}
		for i, s := range []v1alpha1.Step{v1alpha1.StepResearcher, v1alpha1.StepCompliance, v1alpha1.StepTrain, v1alpha1.StepEval, v1alpha1.StepGit} {
			r.timeline[s] = at(starts[i])
		}
		return r
	}
	cases := map[string]struct {
		rounds []roundTimes
		// start is when the baseline was measured, 0 unless set.
		start, end float64
		want       accounting
	}{
		"sequential": {
			// Each round: research 10 + 1, check 2, train 20 + 0.5,
			// eval 1 + 0.5, git 1.
			rounds: []roundTimes{round(1, 0, 11, 13, 33.5, 35), round(2, 36, 47, 49, 69.5, 71)},
			end:    72,
			want: accounting{
				wall: 72 * time.Second, user: 62 * time.Second,
				handoffs: handoffs{researchCheck: 2 * time.Second, checkTrain: 4 * time.Second, trainEval: time.Second, evalGit: time.Second, gitNext: 2 * time.Second},
				// Per round: training 20 → 300 s, research 10 → 150 s.
				stretch: 2 * (280 + 140) * time.Second,
			},
		},
		"pipelined, research hidden": {
			// Round 2 researches from 14 to 24 and is checked at 26,
			// while round 1 trains; it trains 1.5 s after round 1's git.
			rounds: []roundTimes{round(1, 0, 11, 13, 33.5, 35), round(2, 14, 26, 36.5, 57, 58.5)},
			end:    59.5,
			want: accounting{
				wall: 59500 * time.Millisecond, user: 52 * time.Second,
				handoffs: handoffs{researchCheck: time.Second, checkTrain: 2 * time.Second, trainEval: time.Second, evalGit: time.Second, gitNext: 2500 * time.Millisecond},
				// Round 2's research stays hidden at the budget.
				stretch: (140 + 2*280) * time.Second,
			},
		},
		"pipelined, round 1 researched while the baseline trained": {
			// Round 1 researches from -25 to -15 and is checked at -14,
			// before the baseline's end at 0; it trains 1.5 s after.
			rounds: []roundTimes{round(1, -25, -14, 1.5, 22, 23.5)},
			end:    24.5,
			want: accounting{
				wall: 24500 * time.Millisecond, user: 21 * time.Second,
				handoffs: handoffs{trainEval: 500 * time.Millisecond, evalGit: 500 * time.Millisecond, gitNext: 2500 * time.Millisecond},
				// Its research stays hidden at the budget too.
				stretch: 280 * time.Second,
			},
		},
		"pipelined, the GPUs wait for research": {
			// Round 2 researches from 30 to 40, 5 s past round 1's git at
			// 35, is checked at 41 and trains at 43.
			rounds: []roundTimes{round(1, 0, 11, 13, 33.5, 35), round(2, 30, 41, 43, 63.5, 65)},
			end:    66,
			want: accounting{
				wall: 66 * time.Second, user: 57 * time.Second,
				handoffs: handoffs{researchCheck: 2 * time.Second, checkTrain: 4 * time.Second, trainEval: time.Second, evalGit: time.Second, gitNext: time.Second},
				// Round 2's 5 s of research outlast the longer training
				// by nothing: max(5 + 140 - 280, 0) - 5.
				stretch: (140 + 2*280 - 5) * time.Second,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := account(tc.rounds, at(tc.start), at(tc.end), 20*time.Second, 10*time.Second, benchTrainingBudget)
			if got != tc.want {
				t.Errorf("account:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.user+got.handoffs.total() != got.wall {
				t.Errorf("user %s + handoffs %s != wall %s", got.user, got.handoffs.total(), got.wall)
			}
		})
	}
}

// TestBenchCeiling checks the most experiments per GPU-hour that a number
// of rounds allows: with the research no longer than the training, round
// 1's hides behind the baseline's, and pipelined rounds of a 5-minute
// budget take 5 minutes each, 12 experiments per GPU-hour; research longer
// than the training is waited for, round 1's past the baseline's.
func TestBenchCeiling(t *testing.T) {
	const train = 10 * time.Second
	cases := []struct {
		rounds int
		cell   benchCell
		want   float64
	}{
		{3, benchCell{pipeline: true, research: train}, 12},
		{3, benchCell{pipeline: false, research: train}, 6},
		{3, benchCell{pipeline: true, research: train / 2}, 12},
		{15, benchCell{pipeline: true, research: train}, 12},
		{15, benchCell{pipeline: true, research: 2 * train}, 15 / (155.0 / 60)},
	}
	for _, tc := range cases {
		if got := ceilingPerGPUHour(tc.rounds, tc.cell, train, benchTrainingBudget); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%d rounds of %s: %.4f, want %.4f", tc.rounds, tc.cell, got, tc.want)
		}
	}
}

// TestBenchToyScores plays the synthetic experiment's plan on its
// train.sh: a lone candidate improves in some rounds and not in others,
// and of eight, one finds each round's best setting.
func TestBenchToyScores(t *testing.T) {
	s := benchSettings{train: 20 * time.Second, rounds: 4}
	files, err := benchToy(s, benchCell{candidates: 8, research: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(p, []byte(files["plan.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scripted.LoadPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	// score runs train.sh with edit made.
	score := func(e scripted.Edit) int {
		src := strings.Replace(files["train.sh"], e.Old, e.New, 1)
		cmd := exec.Command("sh", "-c", src)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("train.sh with %s: %v: %s", e.New, err, out)
		}
		data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var lone, best []int
	for _, r := range plan.Rounds {
		if len(r.Candidates) != 8 || r.Candidates[7].Sleep.Duration != 10*time.Second {
			t.Fatalf("round %q: %d candidates, want 8 that sleep 10s", r.Strategy, len(r.Candidates))
		}
		lone = append(lone, score(r.For("a").Edits[0]))
		top := math.MinInt
		for _, c := range r.Candidates {
			top = max(top, score(c.Edits[0]))
		}
		best = append(best, top)
	}
	if got, want := fmt.Sprint(lone), "[16 -11 -11 21]"; got != want {
		t.Errorf("candidate a's scores %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(best), "[25 25 25 25]"; got != want {
		t.Errorf("each round's best score %s, want %s", got, want)
	}
}
