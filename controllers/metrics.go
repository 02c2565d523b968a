package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/metric"
)

// Prometheus metrics on the manager's metrics endpoint.
var (
	roundsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "autoresearch_rounds_total",
		Help: "Rounds finished, by verdict.",
	}, []string{"namespace", "name", "verdict"})
	bestMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "autoresearch_best_metric",
		Help: "The best committed metric value of each experiment.",
	}, []string{"namespace", "name", "metric"})
	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "autoresearch_step_duration_seconds",
		Help:    "Wall time of the user processes of each step.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"step"})
	gpuSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "autoresearch_gpu_seconds_total",
		Help: "GPU-seconds used by training and evaluation.",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(roundsTotal, bestMetric, stepDuration, gpuSeconds)
}

func recordRoundMetrics(ar *v1alpha1.AutoResearch, rec v1alpha1.RoundRecord) {
	roundsTotal.WithLabelValues(ar.Namespace, ar.Name, string(rec.Verdict)).Inc()
	d := rec.Durations
	for step, v := range map[string]*metav1.Duration{"researcher": d.Researcher, "train": d.Train, "eval": d.Eval} {
		if v != nil {
			stepDuration.WithLabelValues(step).Observe(v.Seconds())
		}
	}
}

func recordExperimentMetrics(ar *v1alpha1.AutoResearch, old *v1alpha1.AutoResearchStatus) {
	if b := ar.Status.Best; b != nil {
		if v, err := metric.ParseDecimal(b.Value); err == nil {
			bestMetric.WithLabelValues(ar.Namespace, ar.Name, ar.Spec.Eval.Metric).Set(v)
		}
	}
	if d := ar.Status.Usage.GPUSeconds - old.Usage.GPUSeconds; d > 0 {
		gpuSeconds.WithLabelValues(ar.Namespace, ar.Name).Add(float64(d))
	}
}

// forgetExperimentMetrics removes a deleted experiment's series, so that a
// long-lived operator does not export every experiment it ever ran.
func forgetExperimentMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{roundsTotal, bestMetric, gpuSeconds} {
		v.DeletePartialMatch(labels)
	}
}
