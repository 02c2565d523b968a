//go:build e2e

package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
	"github.com/autoresearch-dev/autoresearch-operator/test/tamper"
)

// realNodeAttacks are the attacks of clusterAttacks that the container
// runtime holds off, in the order of the rounds that run them: the git
// directory mounted read-only into the Researcher's pod, processes that
// die with their container, training's checkout without the workspace
// repository above it, outputs copied out of training's own file system,
// and the termination message as training's container leaves it. They
// add train-plants-filter, which the process node cannot run (its
// containers see the host's file system). Those that need Go in the
// evaluation are left out: the evaluation here is a shell script in the
// operator's image.
var realNodeAttacks = []attack{
	{"hook-post-commit", v1alpha1.VerdictNotImproved},
	{"new-branch", v1alpha1.VerdictNotImproved},
	{"researcher-commit", v1alpha1.VerdictResearcherFailed},
	{"setsid-edit-eval", v1alpha1.VerdictNotImproved},
	{"append-eval-log", v1alpha1.VerdictNotImproved},
	{"researcher-lingers", v1alpha1.VerdictNotImproved},
	{"daemon-train", v1alpha1.VerdictNotImproved},
	{"train-lingers", v1alpha1.VerdictNotImproved},
	{"train-rewrites-eval", v1alpha1.VerdictNotImproved},
	{"train-links-eval-log", v1alpha1.VerdictNotImproved},
	{"train-plants-filter", v1alpha1.VerdictNotImproved},
	{"planted-output", v1alpha1.VerdictEvalFailed},
	{"output-symlink", v1alpha1.VerdictEvalFailed},
	{"train-forges-result", v1alpha1.VerdictTrainFailed},
}

// TestRealNodeHoldsOffTheAttacks runs realNodeAttacks through the operator
// on the real node, one round each, as TestAttacksOnCluster runs its
// attacks on the process node: the Researcher runs its round's script from
// a ConfigMap its pod template mounts, every step runs in the operator's
// image, and the workspace is a volume this test reads. A command an
// attack plants touches a marker at the top of the workspace, which the
// operator's compliance and git pods, where a planted hook or filter
// would run, can write.
func TestRealNodeHoldsOffTheAttacks(t *testing.T) {
	if os.Getenv("E2E_REAL_NODE") != "1" {
		t.Skip("needs the real node: make e2e-real (E2E_REAL_NODE=1)")
	}
	parallel(t)
	operatorImage := realNodeImage(t, "operator")
	install(t)
	m := &manager{t: t, image: operatorImage}
	m.start()
	defer m.stop()

	repos := t.TempDir()
	repo := filepath.Join(repos, "toy")
	toy := maps.Clone(tamper.Toy)
	toy["eval.sh"] = "#!/bin/sh\necho \"score: $(cat out.txt)\"\n"
	gittest.WriteFiles(t, repo, toy)
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", "toy")
	userRepo := tamper.RepoGitState(t, repo)
	url := gitDaemon(t, repos) + "/toy"
	hostVolume(t, tamperName+"-workspace")

	scripts := map[string]string{}
	var plan []string
	for _, a := range realNodeAttacks {
		data, err := os.ReadFile(attackScript(t, a.name))
		if err != nil {
			t.Fatal(err)
		}
		scripts[a.name+".sh"] = string(data)
		plan = append(plan, a.name)
	}
	configMap, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": tamperName + "-attacks", "namespace": ns},
		"data":     scripts,
	})
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, string(configMap), "apply", "-f", "-")
	t.Cleanup(func() { _, _ = tryKubectl("", "delete", "configmap", tamperName+"-attacks", "-n", ns) })

	const marker = "/workspace/planted-command-ran"
	start := time.Now()
	applyExperiment(t, tamperName, url, map[string]any{
		"researchQuestion": "Does a higher SCORE help?",
		// A score above anything the toy's honest SCORE edits reach: only
		// a forged score could be improved.
		"baseline":     map[string]any{"value": "50"},
		"maxRounds":    len(realNodeAttacks),
		"historyLimit": len(realNodeAttacks) + 1,
		"fixed":        map[string]any{"files": []string{"eval.sh", "check/main.go", "golden/"}, "timeLimit": "30s"},
		"variable":     map[string]any{"files": []string{"train.sh"}},
		"train":        map[string]any{"image": operatorImage, "command": "./train.sh", "outputs": []string{"out.txt"}, "gpus": 0},
		"eval":         map[string]any{"image": operatorImage, "metric": "score", "direction": "maximize", "command": "./eval.sh"},
		"researcher": map[string]any{
			"command": `sh "/attacks/$(echo $PLAN | cut -d " " -f $AUTORESEARCH_ROUND).sh"`,
			"env":     []map[string]string{{"name": "MARKER", "value": marker}, {"name": "PLAN", "value": strings.Join(plan, " ")}},
			"podTemplate": map[string]any{"spec": map[string]any{
				"volumes":    []any{map[string]any{"name": "attacks", "configMap": map[string]any{"name": tamperName + "-attacks"}}},
				"containers": []any{map[string]any{"name": "researcher", "volumeMounts": []any{map[string]any{"name": "attacks", "mountPath": "/attacks", "readOnly": true}}}},
			}},
		},
	})

	logged := 0
	eventually(t, "the attack rounds", 30*time.Minute, func() bool {
		ar := experimentNamed(t, tamperName)
		// Each verdict as it comes, for whoever watches the test.
		for _, h := range ar.Status.History {
			if int(h.Round) > logged && int(h.Round) <= len(realNodeAttacks) {
				logged = int(h.Round)
				t.Logf("round %d, %s: %s (%s)", h.Round, realNodeAttacks[h.Round-1].name, h.Verdict, h.Insight)
			}
		}
		return ar.Status.Phase == v1alpha1.PhaseFailed || (ar.Status.Phase == v1alpha1.PhaseSucceeded && ar.Status.LedgerCommit != "")
	})
	ar := experimentNamed(t, tamperName)
	t.Logf("%d attack rounds in %s", len(realNodeAttacks), time.Since(start).Round(time.Second))
	if ar.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded: %s", ar.Status.Phase, ar.Status.Message)
	}

	t.Run("each attack ends in its verdict", func(t *testing.T) { checkAttackVerdicts(t, ar, realNodeAttacks) })
	ws := openVolume(t, ar)
	t.Run("no planted command ran", func(t *testing.T) {
		if _, err := os.Lstat(filepath.Join(ws.dir, filepath.Base(marker))); err == nil {
			t.Error("a command an attack planted ran in a pod of the operator's")
		}
		if after := tamper.RepoGitState(t, repo); !reflect.DeepEqual(userRepo, after) {
			t.Errorf("the user's repository changed:\nbefore %+v\nafter  %+v", userRepo, after)
		}
	})
	t.Run("the experiment branch holds nothing of any attack", func(t *testing.T) { checkBranch(t, ws, ar.Status.Workspace.StartCommit) })
	t.Run("the workspace repository is the supervisor's", func(t *testing.T) { checkWorkspaceRepo(t, ws) })
	t.Run("the next round's worktree is the branch", func(t *testing.T) { checkWorktree(t, ws) })
}
