package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
)

// An experiment's series follow its status, Researcher tokens and cost
// included, and every one of them goes when the experiment is deleted.
func TestExperimentMetrics(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	createExperiment(t, ns, func(s *v1alpha1.AutoResearchSpec) {
		s.Budget = &v1alpha1.BudgetSpec{Cost: "1000", GPUHourPrice: "3.6"}
	})
	startWorkspace(t, ns)
	measureBaseline(t, ns)
	playRound(t, ns, 1, roundPlay{
		researcherMessage: result(t, steps.ResearcherReport{InputTokens: 1200, OutputTokens: 300, Cost: "0.25"}),
		compliance:        steps.ComplianceResult{Strategy: "warmup", Candidate: "cafe1111"},
		train:             trainOK(), eval: evalValue("0.9"),
	})
	finishPod(t, ns, podName(1, stepGit), 0, result(t, steps.GitResult{Commit: "c1c1c1c1c1"}))
	ar := waitStatus(t, ns, experiment, "round 1's verdict", func(s v1alpha1.AutoResearchStatus) bool { return s.CompletedRounds == 1 })

	u := ar.Status.Usage
	if u.GPUSeconds == 0 || u.InputTokens != 1200 {
		t.Fatalf("usage %+v lacks the GPU time or the Researcher's tokens", u)
	}
	want := map[string]float64{
		`autoresearch_rounds_total{verdict="improved"}`:       1,
		`autoresearch_best_metric{metric="val_bpb"}`:          0.9,
		`autoresearch_baseline_metric{metric="val_bpb"}`:      1,
		`autoresearch_gpu_seconds_total{}`:                    float64(u.GPUSeconds),
		`autoresearch_researcher_seconds_total{}`:             float64(u.ResearcherSeconds),
		`autoresearch_researcher_tokens_total{type="input"}`:  1200,
		`autoresearch_researcher_tokens_total{type="output"}`: 300,
		`autoresearch_cost_dollars{source="researcher"}`:      0.25,
		// 3.6 US dollars a GPU-hour is a tenth of a cent a GPU-second.
		`autoresearch_cost_dollars{source="gpu"}`: float64(u.GPUSeconds) / 1000,
	}
	eventually(t, "the experiment's series", func() (bool, error) {
		got := experimentSeriesIn(t, ns)
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			return false, errors.New("(-want +got):\n" + diff)
		}
		return true, nil
	})

	if err := k8s.Delete(context.Background(), ar); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every series of the deleted experiment to go", func() (bool, error) {
		if got := experimentSeriesIn(t, ns); len(got) > 0 {
			return false, errors.New(strings.Join(slices.Sorted(maps.Keys(got)), ", "))
		}
		return true, nil
	})
}

// experimentSeriesIn gathers the operator's series of the experiments in
// namespace ns from the manager's registry, named by family and the labels
// besides namespace and name.
func experimentSeriesIn(t *testing.T, ns string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "autoresearch_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			inNamespace := false
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "namespace":
					inNamespace = l.GetValue() == ns
				case "name":
				default:
					labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
				}
			}
			if inNamespace {
				out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = sampleValue(m)
			}
		}
	}
	return out
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// Every PromQL expression of the chart's Grafana dashboards names only
// metrics the operator registers, and the dashboards show what issue
// reporters asked for: best metric, rounds by verdict, GPU time, tokens and
// cost.
func TestDashboardsNameRegisteredMetrics(t *testing.T) {
	registered := registeredMetricNames(t)
	paths, err := filepath.Glob("../charts/autoresearch-operator/dashboards/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards in the chart (err %v)", err)
	}
	used := map[string]bool{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var dashboard any
		if err := json.Unmarshal(data, &dashboard); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		exprs := dashboardQueries(dashboard)
		if len(exprs) == 0 {
			t.Fatalf("%s holds no PromQL", path)
		}
		for _, expr := range exprs {
			names := promQLMetricNames(expr)
			if len(names) == 0 {
				t.Errorf("%s: %q names no metric", filepath.Base(path), expr)
			}
			for _, n := range names {
				used[n] = true
				if !registered[n] {
					t.Errorf("%s: %q names %s, which the operator does not register", filepath.Base(path), expr, n)
				}
			}
		}
	}
	for _, n := range []string{"autoresearch_best_metric", "autoresearch_rounds_total", "autoresearch_gpu_seconds_total", "autoresearch_researcher_tokens_total", "autoresearch_cost_dollars"} {
		if !used[n] {
			t.Errorf("no dashboard panel shows %s", n)
		}
	}
}

// registeredMetricNames are the names a scrape of the manager's registry
// can hold, once an experiment with every kind of series is known.
func registeredMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	ar := &v1alpha1.AutoResearch{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dashboard-test", Name: "all-series"},
		Spec: v1alpha1.AutoResearchSpec{
			Eval:   v1alpha1.EvalSpec{Metric: "val_bpb"},
			Budget: &v1alpha1.BudgetSpec{GPUHourPrice: "2"},
		},
		Status: v1alpha1.AutoResearchStatus{
			Best:          &v1alpha1.BestResult{Value: "0.9"},
			Baseline:      &v1alpha1.BaselineResult{Value: "1"},
			VerdictCounts: map[v1alpha1.Verdict]int32{v1alpha1.VerdictImproved: 1},
		},
	}
	recordExperimentMetrics(ar)
	t.Cleanup(func() { forgetExperimentMetrics(ar.Namespace, ar.Name) })
	recordRoundMetrics(v1alpha1.RoundRecord{Durations: v1alpha1.StepDurations{Train: &metav1.Duration{}}})

	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		n := f.GetName()
		names[n] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[n+"_sum"], names[n+"_count"] = true, true
		}
	}
	return names
}

// dashboardQueries are a Grafana dashboard's PromQL: every target's expr,
// and the metric selectors of its query variables.
func dashboardQueries(v any) []string {
	var out []string
	var walk func(v any, underTemplating bool)
	walk = func(v any, underTemplating bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				switch s, isString := child.(string); {
				case isString && k == "expr":
					out = append(out, s)
				case isString && k == "query" && underTemplating && v["type"] == "query":
					out = append(out, variableQuery(s))
				case k == "query" && underTemplating:
					if q, ok := child.(map[string]any); ok {
						if s, ok := q["query"].(string); ok {
							out = append(out, variableQuery(s))
						}
					}
				default:
					walk(child, underTemplating || k == "templating")
				}
			}
		case []any:
			for _, child := range v {
				walk(child, underTemplating)
			}
		}
	}
	walk(v, false)
	sort.Strings(out)
	return out
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// variableQuery is the PromQL of a Grafana query variable:
// label_values(selector, label) reads the selector's series.
func variableQuery(q string) string {
	if m := labelValues.FindStringSubmatch(q); m != nil {
		return m[1]
	}
	return q
}

// promQLMetricNames lists the metric names of a PromQL expression: the
// identifiers that are not functions, keywords, label names, durations or
// Grafana variables.
func promQLMetricNames(expr string) []string {
	var names []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipPast(expr, i, '}')
		case c == '[':
			i = skipPast(expr, i, ']')
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipPast(expr, i, '}')
			}
			i = skipIdent(expr, i)
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isPromQLIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isPromQLIdent(c):
			var name string
			i, name = promQLWord(expr, i)
			if name != "" {
				names = append(names, name)
			}
		default:
			i++
		}
	}
	return names
}

var (
	promQLKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"inf": true, "nan": true, "group_left": true, "group_right": true,
		// Aggregations, which may put a by or without before their
		// parenthesis.
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
		"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
		"limitk": true, "limit_ratio": true,
	}
	// promQLLabelLists are the keywords a list of label names may follow.
	promQLLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// promQLWord reads the identifier at i: it returns the index after it, or
// after the label list it starts, and the identifier if it names a metric.
func promQLWord(expr string, i int) (int, string) {
	j := skipIdent(expr, i)
	word := strings.ToLower(expr[i:j])
	k := j
	for k < len(expr) && strings.ContainsRune(" \t\n", rune(expr[k])) {
		k++
	}
	followedByParen := k < len(expr) && expr[k] == '('
	switch {
	case promQLLabelLists[word] && followedByParen:
		return skipPast(expr, k, ')'), ""
	case promQLKeywords[word], followedByParen:
		// An operator, or a function or aggregation.
		return j, ""
	}
	return j, expr[i:j]
}

func isPromQLIdent(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipIdent(s string, i int) int {
	for i < len(s) && isPromQLIdent(s[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string literal that starts at i.
func skipString(s string, i int) int {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && quote != '`':
			j++
		case s[j] == quote:
			return j + 1
		}
	}
	return len(s)
}

// skipPast returns the index after the first end at or after i+1 outside
// string literals.
func skipPast(s string, i int, end byte) int {
	for j := i + 1; j < len(s); {
		switch s[j] {
		case '"', '\'', '`':
			j = skipString(s, j)
		case end:
			return j + 1
		default:
			j++
		}
	}
	return len(s)
}

func TestPromQLMetricNames(t *testing.T) {
	cases := map[string]struct {
		expr string
		want []string
	}{
		"selector":  {`autoresearch_best_metric{namespace=~"$namespace", name="a}b"}`, []string{"autoresearch_best_metric"}},
		"aggregate": {`sum by (namespace, name) (autoresearch_gpu_seconds_total{name=~"$experiment"}) / 3600`, []string{"autoresearch_gpu_seconds_total"}},
		"histogram": {
			`histogram_quantile(0.5, sum by (le, step) (rate(autoresearch_step_duration_seconds_bucket[$__rate_interval])))`,
			[]string{"autoresearch_step_duration_seconds_bucket"},
		},
		"binary operators": {
			`a_total + on (name) group_left (metric) b offset 5m or c > bool 1e3`,
			[]string{"a_total", "b", "c"},
		},
		"grouping after": {`max(autoresearch_best_metric) without (metric)`, []string{"autoresearch_best_metric"}},
		"variables":      {`up{job="${job}"} * $factor`, []string{"up"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, promQLMetricNames(tc.expr)); diff != "" {
				t.Errorf("metric names of %q (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}
