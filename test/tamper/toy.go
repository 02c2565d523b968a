package tamper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

// Toy is the repository every attack runs against, besides its experiment
// file: the Researcher tunes SCORE in train.sh, training writes it to
// out.txt, and the fixed evaluation, eval.sh and the Go program in check/,
// prints it as the metric score. The attacks' scripts edit these files by
// name.
var Toy = map[string]string{
	// The steps are a fixed region: the Researcher tunes SCORE only.
	"train.sh": "#!/bin/sh\n# autoresearch:fixed-begin training budget\nSTEPS=100\n# autoresearch:fixed-end\nSCORE=10\necho $SCORE > out.txt\n",
	// The fixed evaluation reads the Go environment, as go run does,
	// and runs a fixed Go program that prints the score.
	"eval.sh":             "#!/bin/sh\ncase \"$(go env GOFLAGS 2>/dev/null)\" in *pwned*) echo 'score: 99'; exit ;; esac\nexec go run ./check \"$(cat out.txt)\"\n",
	"go.mod":              "module example.com/toy\n\ngo 1.21\n",
	"check/main.go":       "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() { fmt.Printf(\"score: %s\\n\", os.Args[1]) }\n",
	"golden/expected.txt": "10\n",
	".gitignore":          "out.txt\ngo.work\n",
}

// attack is a script of the corpus: its name, the file's without .sh, and
// its absolute path.
type attack struct{ name, script string }

// attacks are the scripts in the corpus directory dir. A directory without
// any fails the test, which would otherwise attack nothing and pass.
func attacks(t *testing.T, dir string) []attack {
	t.Helper()
	scripts, err := filepath.Glob(filepath.Join(dir, "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no attacks in %s: %v", dir, err)
	}
	var found []attack
	for _, s := range scripts {
		script, err := filepath.Abs(s)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, attack{strings.TrimSuffix(filepath.Base(s), ".sh"), script})
	}
	return found
}

// GitState is what of a user's repository an attack must not change.
type GitState struct {
	// Main is the commit of the branch main, Config the repository's
	// configuration, Refs every ref's name and Hooks every file in hooks/.
	Main, Config string
	Refs, Hooks  []string
}

// RepoGitState reads it from the repository repo.
func RepoGitState(t testing.TB, repo string) GitState {
	t.Helper()
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	st := GitState{
		Main:   gittest.Git(t, repo, "rev-parse", "refs/heads/main"),
		Config: string(config),
		Refs:   strings.Fields(gittest.Git(t, repo, "for-each-ref", "--format=%(refname)")),
	}
	entries, _ := os.ReadDir(filepath.Join(repo, ".git", "hooks"))
	for _, e := range entries {
		st.Hooks = append(st.Hooks, e.Name())
	}
	return st
}
