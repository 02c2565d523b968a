package tamper

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/runner"
)

// TestStepsGetNoModelKey runs the attacks in attacks-env/ with the model
// providers' key variables set, as a user who runs the built-in agent has
// them: the Researcher gets them, and the code it writes, which training
// and the evaluation run, does not. Every attack improves honestly, to 20,
// only where its Researcher saw a key; a forged 99, or a key anywhere in
// the repository or the run's state, fails it. A command the Researcher's
// agent runs, without the key, finds it in no other process either.
func TestStepsGetNoModelKey(t *testing.T) {
	keys := map[string]string{
		"AUTORESEARCH_API_KEY": "SECRET-AUTORESEARCH-KEY",
		"ANTHROPIC_API_KEY":    "SECRET-ANTHROPIC-KEY",
		"OPENAI_API_KEY":       "SECRET-OPENAI-KEY",
		"CODEX_API_KEY":        "SECRET-CODEX-KEY",
	}
	for name, key := range keys {
		t.Setenv(name, key)
	}
	for _, a := range attacks(t, "attacks-env") {
		name, script := a.name, a.script
		t.Run(name, func(t *testing.T) { stepsGetNoModelKey(t, script, keys) })
		if name == "researchers-command-reads-the-key" {
			// Without the mounts' namespaces the runner, and the shell that
			// starts a step, hold the key as the Researcher's user
			// (docs/security.md, "Containment, the rest").
			continue
		}
		t.Run(name+"/without-mounts", func(t *testing.T) {
			defer runner.WithoutMounts()()
			stepsGetNoModelKey(t, script, keys)
		})
	}
}

func stepsGetNoModelKey(t *testing.T, script string, keys map[string]string) {
	t.Helper()
	files := maps.Clone(PyToy)
	files["experiment.yaml"] = pyToyExperiment("env", `{value: "10"}`, "python3", script)
	repo := filepath.Join(t.TempDir(), "repo")
	_, st, log := runRepoWith(t, repo, files, runner.Options{})
	if st.Best == nil || st.Best.Value != "20" {
		t.Errorf("best %+v, want the honest 20: training read a key, or the Researcher got none\n%s", st.Best, log)
	}
	for _, key := range keys {
		if where := holding(t, filepath.Dir(repo), key); where != "" {
			t.Errorf("%s holds the key %s", where, key)
		}
		if strings.Contains(log, reverse(key)) {
			t.Errorf("the run's output holds the key %s", key)
		}
	}
}

// holding is a file under dir that holds key, forwards or reversed; "" if
// none does.
func holding(t *testing.T, dir, key string) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if s := string(data); strings.Contains(s, key) || strings.Contains(s, reverse(key)) {
			found = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
