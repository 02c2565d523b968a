package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/internal/steps"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

func TestCreateWorkspace(t *testing.T) {
	repo := newRepo(t, toyFiles)
	o := WorkspaceOptions{
		Repo: repo, Subdir: "exp", Worktree: filepath.Join(filepath.Dir(repo), "worktree"), Name: "toy",
		Metric: "score", MaxRounds: 3, Fixed: []string{"eval.sh"},
	}
	ws, res, _, err := CreateWorkspace(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(toyFiles["exp/eval.sh"]))
	want := steps.WorkspaceResult{
		Branch:      "autoresearch/toy",
		StartCommit: git(t, ws.Root, "rev-parse", "HEAD"),
		FixedHashes: map[string]string{"eval.sh": hex.EncodeToString(sum[:])},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	ledger, err := workspace.ReadLedger(ws.ExperiencesPath())
	if err != nil {
		t.Fatal(err)
	}
	if ledger.MaxRounds != 3 || ledger.Status != "not_started" || len(ledger.Rows) != 1 || ledger.Rows[0].Round != 0 {
		t.Errorf("ledger = %+v, want 3 max rounds, not_started and the baseline's row", ledger)
	}

	// A retried step reuses the worktree and finds the same start.
	_, again, _, err := CreateWorkspace(context.Background(), o)
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if diff := cmp.Diff(res, again); diff != "" {
		t.Errorf("second call's result (-first +second):\n%s", diff)
	}
}

func TestCreateWorkspaceFailures(t *testing.T) {
	cases := map[string]struct {
		change  func(*WorkspaceOptions)
		wantErr string
	}{
		"missing fixed file":           {func(o *WorkspaceOptions) { o.Fixed = []string{"nope.py"} }, "fixed files: hashing nope.py"},
		"no such experiment directory": {func(o *WorkspaceOptions) { o.Subdir = "other" }, "experiment directory other is not committed"},
		"invalid name":                 {func(o *WorkspaceOptions) { o.Name = "a..b" }, "does not make a valid git branch name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t, toyFiles)
			o := WorkspaceOptions{Repo: repo, Subdir: "exp", Worktree: filepath.Join(filepath.Dir(repo), "worktree"), Name: "toy", Metric: "score"}
			tc.change(&o)
			_, _, _, err := CreateWorkspace(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
