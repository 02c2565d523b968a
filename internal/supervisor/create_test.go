package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
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

// TestCreateWorkspacePatterns checks that fixed patterns are hashed as the
// files they match and that the fixed regions of the other files are found,
// while unpaired markers stop the experiment before it starts.
func TestCreateWorkspacePatterns(t *testing.T) {
	files := map[string]string{
		"exp/train.sh":        "#!/bin/sh\n# autoresearch:fixed-begin limits\nLIMIT=5\n# autoresearch:fixed-end\nSCORE=10\n",
		"exp/eval/score.sh":   "#!/bin/sh\necho score: 10\n",
		"exp/eval/lib/x.sh":   "x\n",
		"exp/eval/marked.txt": "autoresearch:fixed-begin in a fixed file is no region\n",
		"README.md":           "a toy\n",
	}
	repo := newRepo(t, files)
	o := WorkspaceOptions{Repo: repo, Subdir: "exp", Worktree: filepath.Join(filepath.Dir(repo), "worktree"), Name: "toy", Metric: "score", Fixed: []string{"eval/"}}
	_, res, _, err := CreateWorkspace(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var hashed []string
	for f := range res.FixedHashes {
		hashed = append(hashed, f)
	}
	slices.Sort(hashed)
	if diff := cmp.Diff([]string{"eval/lib/x.sh", "eval/marked.txt", "eval/score.sh"}, hashed); diff != "" {
		t.Errorf("hashed files (-want +got):\n%s", diff)
	}
	want := []v1alpha1.FixedRegion{{Path: "train.sh", Lines: "2-4", Begin: "# autoresearch:fixed-begin limits"}}
	if diff := cmp.Diff(want, res.FixedRegions); diff != "" {
		t.Errorf("regions (-want +got):\n%s", diff)
	}

	files["exp/train.sh"] = "#!/bin/sh\n# autoresearch:fixed-begin limits\nLIMIT=5\n"
	repo = newRepo(t, files)
	o.Repo, o.Worktree = repo, filepath.Join(filepath.Dir(repo), "worktree")
	if _, _, _, err := CreateWorkspace(context.Background(), o); err == nil || !strings.Contains(err.Error(), "fixed region markers of train.sh: the begin marker on line 2 has no end marker") {
		t.Errorf("unpaired markers: %v", err)
	}
}

func TestCreateWorkspaceFailures(t *testing.T) {
	cases := map[string]struct {
		change  func(*WorkspaceOptions)
		wantErr string
	}{
		"missing fixed file":           {func(o *WorkspaceOptions) { o.Fixed = []string{"nope.py"} }, "fixed files: fixed nope.py matches no file in the start commit"},
		"pattern matching nothing":     {func(o *WorkspaceOptions) { o.Fixed = []string{"eval.sh", "eval/**"} }, "fixed eval/** matches no file"},
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
