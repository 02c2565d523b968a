package round

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestNextConditions(t *testing.T) {
	const gen = 7
	all := []string{
		v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionSuspended,
		v1alpha1.ConditionSucceeded, v1alpha1.ConditionFailed, v1alpha1.ConditionDegraded,
	}
	cases := map[string]struct {
		spec  func(*v1alpha1.AutoResearchSpec)
		setup func(*driver)
		obs   Observation
		want  map[string]string
	}{
		"initializing": {
			obs: tick(),
			want: map[string]string{
				"Ready": "False/Initializing", "Progressing": "True/RoundInProgress", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"measuring the baseline": {
			spec:  func(s *v1alpha1.AutoResearchSpec) { s.Baseline = nil },
			setup: func(d *driver) { d.next(tick()) },
			obs:   workspaceReady(),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"suspended": {
			setup: func(d *driver) {
				d.start()
				d.spec.Suspend = ptr.To(true)
			},
			obs: researched(1, "s"),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "False/Suspended", "Suspended": "True/SuspendedByUser",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"plateau": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.Plateau = &v1alpha1.PlateauSpec{Rounds: 1} },
			setup: func(d *driver) {
				d.start()
				d.evaluate("1.1")
			},
			obs: rolledBack(1),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "True/RoundInProgress", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "False/NoFailure", "Degraded": "True/Plateau",
			},
		},
		"succeeded": {
			spec: func(s *v1alpha1.AutoResearchSpec) { s.MaxRounds = 1 },
			setup: func(d *driver) {
				d.start()
				d.evaluate("0.9")
			},
			obs: committed(1, commitOf(1)),
			want: map[string]string{
				"Ready": "True/WorkspaceReady", "Progressing": "False/Succeeded", "Suspended": "False/NotSuspended",
				"Succeeded": "True/MaxRoundsReached", "Failed": "False/NoFailure", "Degraded": "False/Improving",
			},
		},
		"failed": {
			setup: func(d *driver) { d.next(tick()) },
			obs:   Observation{Kind: ObserveWorkspaceFailed, Error: "disk full"},
			want: map[string]string{
				"Ready": "False/Failed", "Progressing": "False/Failed", "Suspended": "False/NotSuspended",
				"Succeeded": "False/NotFinished", "Failed": "True/WorkspaceFailed", "Degraded": "False/Improving",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, givenBaseline)
			if tc.spec != nil {
				tc.spec(d.spec)
			}
			if tc.setup != nil {
				tc.setup(d)
			}
			d.gen = gen
			out := apply(d, tc.obs)
			if diff := cmp.Diff(tc.want, conditions(out.Status, all...)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if out.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", out.Status.ObservedGeneration, gen)
			}
			for _, c := range out.Status.Conditions {
				if c.ObservedGeneration != gen {
					t.Errorf("condition %s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, gen)
				}
			}
		})
	}
}
