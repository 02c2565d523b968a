package controllers

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// Prometheus metrics on the manager's metrics endpoint. Every series of an
// experiment is read from its status, so an operator that restarts exports
// the same totals again, and all of them go with the experiment.
var (
	roundsDesc = prometheus.NewDesc("autoresearch_rounds_total",
		"Rounds judged, by verdict; the baseline is not a round.",
		[]string{"namespace", "name", "verdict"}, nil)
	bestDesc = prometheus.NewDesc("autoresearch_best_metric",
		"The best committed metric value of each experiment.",
		[]string{"namespace", "name", "metric"}, nil)
	baselineDesc = prometheus.NewDesc("autoresearch_baseline_metric",
		"The baseline's metric value of each experiment.",
		[]string{"namespace", "name", "metric"}, nil)
	gpuSecondsDesc = prometheus.NewDesc("autoresearch_gpu_seconds_total",
		"GPU-seconds used by training and evaluation (GPUs × seconds).",
		[]string{"namespace", "name"}, nil)
	researcherSecondsDesc = prometheus.NewDesc("autoresearch_researcher_seconds_total",
		"Seconds the Researchers ran.",
		[]string{"namespace", "name"}, nil)
	tokensDesc = prometheus.NewDesc("autoresearch_researcher_tokens_total",
		"Tokens the Researchers reported, by type (input, output).",
		[]string{"namespace", "name", "type"}, nil)
	costDesc = prometheus.NewDesc("autoresearch_cost_dollars",
		"Spend in US dollars as spec.budget counts it, by source: what the Researchers reported (researcher) and GPU time at spec.budget.gpuHourPrice (gpu, only where a price is set).",
		[]string{"namespace", "name", "source"}, nil)

	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "autoresearch_step_duration_seconds",
		Help:    "Wall time of the user processes of each step.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"step"})

	experiments = &experimentCollector{series: map[types.NamespacedName][]prometheus.Metric{}}
)

func init() {
	metrics.Registry.MustRegister(experiments, stepDuration)
}

// experimentCollector exports each experiment's series as of the status
// the operator last stored or read, until the experiment is deleted.
type experimentCollector struct {
	mu     sync.Mutex
	series map[types.NamespacedName][]prometheus.Metric
}

// Describe implements prometheus.Collector.
func (c *experimentCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{roundsDesc, bestDesc, baselineDesc, gpuSecondsDesc, researcherSecondsDesc, tokensDesc, costDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *experimentCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ms := range c.series {
		for _, m := range ms {
			ch <- m
		}
	}
}

func (c *experimentCollector) set(key types.NamespacedName, ms []prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.series[key] = ms
}

func (c *experimentCollector) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.series, key)
}

// experimentSeries are an experiment's series as its status has them.
func experimentSeries(ar *v1alpha1.AutoResearch) []prometheus.Metric {
	st := &ar.Status
	ns, name := ar.Namespace, ar.Name
	ms := []prometheus.Metric{
		prometheus.MustNewConstMetric(gpuSecondsDesc, prometheus.CounterValue, float64(st.Usage.GPUSeconds), ns, name),
		prometheus.MustNewConstMetric(researcherSecondsDesc, prometheus.CounterValue, float64(st.Usage.ResearcherSeconds), ns, name),
		prometheus.MustNewConstMetric(tokensDesc, prometheus.CounterValue, float64(st.Usage.InputTokens), ns, name, "input"),
		prometheus.MustNewConstMetric(tokensDesc, prometheus.CounterValue, float64(st.Usage.OutputTokens), ns, name, "output"),
		prometheus.MustNewConstMetric(costDesc, prometheus.GaugeValue, decimalOrZero(st.Usage.Cost), ns, name, "researcher"),
	}
	if b := ar.Spec.Budget; b != nil && b.GPUHourPrice != "" {
		gpu := float64(st.Usage.GPUSeconds) / 3600 * decimalOrZero(string(b.GPUHourPrice))
		ms = append(ms, prometheus.MustNewConstMetric(costDesc, prometheus.GaugeValue, gpu, ns, name, "gpu"))
	}
	verdicts := make([]string, 0, len(st.VerdictCounts))
	for v := range st.VerdictCounts {
		verdicts = append(verdicts, string(v))
	}
	sort.Strings(verdicts)
	for _, v := range verdicts {
		n := st.VerdictCounts[v1alpha1.Verdict(v)]
		ms = append(ms, prometheus.MustNewConstMetric(roundsDesc, prometheus.CounterValue, float64(n), ns, name, v))
	}
	if b := st.Best; b != nil {
		if v, err := metric.ParseDecimal(b.Value); err == nil {
			ms = append(ms, prometheus.MustNewConstMetric(bestDesc, prometheus.GaugeValue, v, ns, name, ar.Spec.Eval.Metric))
		}
	}
	if b := st.Baseline; b != nil {
		if v, err := metric.ParseDecimal(b.Value); err == nil {
			ms = append(ms, prometheus.MustNewConstMetric(baselineDesc, prometheus.GaugeValue, v, ns, name, ar.Spec.Eval.Metric))
		}
	}
	return ms
}

// decimalOrZero reads a decimal string of the API; what is not one counts
// as nothing, as the budget does.
func decimalOrZero(s string) float64 {
	v, err := metric.ParseDecimal(s)
	if err != nil {
		return 0
	}
	return v
}

func recordRoundMetrics(rec v1alpha1.RoundRecord) {
	d := rec.Durations
	for step, v := range map[string]*metav1.Duration{"researcher": d.Researcher, "train": d.Train, "eval": d.Eval} {
		if v != nil {
			stepDuration.WithLabelValues(step).Observe(v.Seconds())
		}
	}
}

func recordExperimentMetrics(ar *v1alpha1.AutoResearch) {
	experiments.set(types.NamespacedName{Namespace: ar.Namespace, Name: ar.Name}, experimentSeries(ar))
}

// forgetExperimentMetrics removes a deleted experiment's series, so that a
// long-lived operator does not export every experiment it ever ran.
func forgetExperimentMetrics(namespace, name string) {
	experiments.forget(types.NamespacedName{Namespace: namespace, Name: name})
}
