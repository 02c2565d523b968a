package steps

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
)

func TestArgs(t *testing.T) {
	wt := Worktree{Subdir: "exp", Name: "toy"}
	wtArgs := []string{"--worktree=/workspace/worktree", "--subdir=exp", "--name=toy"}
	ledger := LedgerUpdate{Metric: "score", Rounds: 1, MaxRounds: 3, Status: "running", Round: &LedgerRound{Round: 1, Verdict: "improved"}}
	ledgerJSON := `{"metric":"score","rounds":1,"maxRounds":3,"status":"running","round":{"round":1,"verdict":"improved"}}`
	cases := map[string]struct {
		got  []string
		want []string
	}{
		"train": {
			got: ExecArgs(Binary, ExecOptions{
				Step: StepTrain, Round: 2, Workdir: "/workspace/worktree/exp", Timeout: 90 * time.Second, TimeLimit: time.Minute, EpochLimit: "3",
				Command: []string{"sh", "-c", "python train.py --lr -1"},
			}),
			want: []string{Binary, "exec", "--step=train", "--round=2", "--workdir=/workspace/worktree/exp", "--timeout=1m30s", "--time-limit=1m0s", "--epoch-limit=3",
				"--", "sh", "-c", "python train.py --lr -1"},
		},
		"eval": {
			got: ExecArgs(Binary, ExecOptions{
				Step: StepEval, Round: 0, Workdir: "/w", Timeout: time.Minute, Grace: 5 * time.Second, Metric: "val_bpb", Pattern: `-?\d+`,
				FixedHashesFile: "/etc/hashes/fixed.json", LogPath: "/workspace/logs/round-0/eval-2.log", Command: []string{"./eval.sh"},
			}),
			want: []string{Binary, "exec", "--step=eval", "--round=0", "--workdir=/w", "--timeout=1m0s", "--grace=5s", "--metric=val_bpb", `--pattern=-?\d+`,
				"--fixed-hashes=/etc/hashes/fixed.json", "--log=/workspace/logs/round-0/eval-2.log", "--", "./eval.sh"},
		},
		"parity": {
			got: ExecArgs(Binary, ExecOptions{
				Step: StepParity, Round: 1, Workdir: "/w", Python: "python3", ComplianceFile: "/shared/compliance.json",
				Targets: []v1alpha1.KernelTarget{{Name: "k", NewModule: "a:f", BaselineModule: "b:f", Fixture: "b:x"}},
			}),
			want: []string{Binary, "exec", "--step=parity", "--round=1", "--workdir=/w", "--python=python3", "--compliance=/shared/compliance.json",
				`--targets=[{"name":"k","newModule":"a:f","baselineModule":"b:f","fixture":"b:x"}]`},
		},
		"init": {
			got: InitArgs(Binary, InitOptions{Worktree: wt, CloneURL: "https://example.com/r.git", Ref: "main", Metric: "score", MaxRounds: 3, Fixed: []string{"eval.sh", "data,prep.py"}}),
			want: append(append([]string{Binary, "workspace", "init"}, wtArgs...),
				"--repo=/workspace/source", "--clone-url=https://example.com/r.git", "--ref=main", "--metric=score", "--max-rounds=3", "--fixed=eval.sh", "--fixed=data,prep.py"),
		},
		"prepare": {
			got:  PrepareArgs(Binary, PrepareOptions{Worktree: wt, Round: 2, Base: "abc", Ledger: &ledger}),
			want: append(append([]string{Binary, "workspace", "prepare"}, wtArgs...), "--state-dir=/workspace/state", "--round=2", "--base=abc", "--ledger="+ledgerJSON),
		},
		"a step that installs the tools": {
			got:  WithTools(PrepareArgs(ImageBinary, PrepareOptions{Worktree: wt, Round: 2, Base: "abc"})),
			want: append(append([]string{ImageBinary, "workspace", "prepare"}, wtArgs...), "--state-dir=/workspace/state", "--round=2", "--base=abc", "--install-tools=/autoresearch-tools"),
		},
		"check": {
			got: CheckArgs(Binary, CheckOptions{Worktree: wt, Round: 2, Base: "abc", Start: "s0", SpecFile: "/etc/autoresearch/spec.json", AlsoWrite: "/shared/c.json"}),
			want: append(append([]string{Binary, "workspace", "check"}, wtArgs...), "--state-dir=/workspace/state", "--round=2", "--base=abc", "--start=s0",
				"--spec-file=/etc/autoresearch/spec.json", "--also-write=/shared/c.json"),
		},
		"commit": {
			got:  GitArgs(Binary, GitOptions{Worktree: wt, Action: GitCommit, Base: "abc", Message: "-round 1", Ledger: ledger}),
			want: append(append([]string{Binary, "workspace", "commit"}, wtArgs...), "--state-dir=/workspace/state", "--base=abc", "--message=-round 1", "--ledger="+ledgerJSON),
		},
		"rollback": {
			got:  GitArgs(Binary, GitOptions{Worktree: wt, StateDir: "/state", Action: GitRollback, Base: "abc", Ledger: ledger, ResultPath: "/tmp/r"}),
			want: append(append([]string{Binary, "workspace", "rollback"}, wtArgs...), "--state-dir=/state", "--base=abc", "--ledger="+ledgerJSON, "--result=/tmp/r"),
		},
		"finish": {
			got:  FinishArgs(Binary, FinishOptions{Worktree: Worktree{Dir: "/wt", Subdir: ".", Name: "toy"}, Ledger: LedgerUpdate{Metric: "score", Status: "completed"}}),
			want: []string{Binary, "workspace", "finish", "--worktree=/wt", "--subdir=.", "--name=toy", "--state-dir=/workspace/state", `--ledger={"metric":"score","rounds":0,"maxRounds":0,"status":"completed"}`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckArgsCarryTheSpec(t *testing.T) {
	spec := v1alpha1.AutoResearchSpec{
		ResearchQuestion: "Does it help?", MaxRounds: 3,
		Fixed:    v1alpha1.FixedSpec{Files: []v1alpha1.PathPattern{"eval.sh"}},
		Variable: v1alpha1.VariableSpec{Files: []v1alpha1.RelativePath{"train.sh"}},
	}
	argv := CheckArgs(Binary, CheckOptions{Worktree: Worktree{Name: "toy"}, Base: "abc", Start: "abc", Spec: &spec})
	value, ok := strings.CutPrefix(argv[len(argv)-1], "--spec=")
	if !ok {
		t.Fatalf("the last argument %q is not --spec", argv[len(argv)-1])
	}
	var got v1alpha1.AutoResearchSpec
	if err := json.Unmarshal([]byte(value), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec, got); diff != "" {
		t.Errorf("spec after the round trip (-want +got):\n%s", diff)
	}
}
