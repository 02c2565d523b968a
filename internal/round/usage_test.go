package round

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestNextUsage(t *testing.T) {
	researcher := func(n int32, d time.Duration, u v1alpha1.Usage) Observation {
		return Observation{Kind: ObserveResearcherFinished, Round: n, Researcher: &ResearcherResult{
			Exit: ProcessExit{Duration: d}, Strategy: "s", Usage: u,
		}}
	}
	cases := map[string]struct {
		gpus     int32
		baseline *v1alpha1.BaselineSpec
		usage    []v1alpha1.Usage
		want     v1alpha1.Usage
	}{
		// A given baseline's preflight run counts as well.
		"one GPU": {
			gpus:     1,
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{InputTokens: 1000, OutputTokens: 200, Cost: "0.1"}, {InputTokens: 500, OutputTokens: 100, Cost: "0.2"}},
			want:     v1alpha1.Usage{GPUSeconds: (1 + 2) * 150, ResearcherSeconds: 90 + 31, InputTokens: 1500, OutputTokens: 300, Cost: "0.3"},
		},
		"two GPUs count twice": {
			gpus:     2,
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{}, {}},
			want:     v1alpha1.Usage{GPUSeconds: 2 * (1 + 2) * 150, ResearcherSeconds: 121},
		},
		"no GPU": {
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{}, {}},
			want:     v1alpha1.Usage{ResearcherSeconds: 121},
		},
		// The Researcher reports its usage: a negative count or cost, or a
		// cost that is no finite number, would take back what the rounds
		// before used, or make the total NaN, which no budget stops.
		"a negative count and a negative cost count as nothing": {
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{InputTokens: 1000, Cost: "0.5"}, {InputTokens: -1000000000, OutputTokens: -5, Cost: "-1000"}},
			want:     v1alpha1.Usage{ResearcherSeconds: 121, InputTokens: 1000, Cost: "0.5"},
		},
		"a cost that is no number counts as nothing": {
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{Cost: "NaN"}, {Cost: "+Inf"}},
			want:     v1alpha1.Usage{ResearcherSeconds: 121, Cost: "0"},
		},
		"a count past the largest stops there": {
			baseline: &v1alpha1.BaselineSpec{Value: "1.0"},
			usage:    []v1alpha1.Usage{{InputTokens: math.MaxInt64 - 1}, {InputTokens: math.MaxInt64}},
			want:     v1alpha1.Usage{ResearcherSeconds: 121, InputTokens: math.MaxInt64},
		},
		"measured baseline runs count": {
			gpus:     1,
			baseline: &v1alpha1.BaselineSpec{Runs: 2},
			usage:    []v1alpha1.Usage{{Cost: "1.25"}, {}},
			want:     v1alpha1.Usage{GPUSeconds: (2 + 2) * 150, ResearcherSeconds: 121, Cost: "1.25"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t)
			d.spec.Train.GPUs = &tc.gpus
			d.spec.Baseline = tc.baseline
			d.start()
			for d.current() == 0 {
				d.next(trained(0))
				d.next(evaluated(0, "1.0"))
			}
			d.next(researcher(1, 90400*time.Millisecond, tc.usage[0]))
			d.round("1.1")
			d.next(researcher(2, 30600*time.Millisecond, tc.usage[1]))
			d.round("1.1")
			if diff := cmp.Diff(tc.want, d.st.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}
