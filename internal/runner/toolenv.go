package runner

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// The steps' tool environment. Go and Python read settings from files in
// the user's home that a Researcher can write (go env -w, pip install
// --user), and the fixed evaluation would then run under them. The
// Researcher gets a Go environment file of the experiment's own; training
// and evaluation read none, and get the settings the user's file held when
// the run started, as variables.

// researcherToolEnv points the Researcher's go env -w at a file in the
// supervisor's state directory instead of the user's.
func researcherToolEnv(stateDir string) []string {
	return []string{"GOENV=" + researcherGoEnv(stateDir)}
}

// researcherGoEnv is the Researcher's Go environment file.
func researcherGoEnv(stateDir string) string { return filepath.Join(stateDir, "researcher-go.env") }

// measuredToolEnv is the tool environment of training and evaluation. It
// runs Go as installed (GOTOOLCHAIN=local): a toolchain that a setting
// names is never downloaded and run, neither by the runner nor by a step.
func measuredToolEnv(ctx context.Context) []string {
	env := []string{"GOENV=off", "PYTHONNOUSERSITE=1", "PYTHONSTARTUP=", localToolchain}
	cmd := exec.CommandContext(ctx, "go", "env", "GOENV")
	cmd.Env = append(os.Environ(), localToolchain)
	out, err := cmd.Output()
	if err != nil {
		// No Go toolchain: no Go settings to carry over.
		return env
	}
	data, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		return env
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || key == "" || strings.HasPrefix(key, "#") || key == "GOTOOLCHAIN" {
			continue
		}
		// As in go itself, a variable the user set wins over the file.
		if _, set := os.LookupEnv(key); !set {
			env = append(env, key+"="+value)
		}
	}
	return env
}

// versionPins fixes the interpreter and the toolchain that version
// managers on the steps' PATH choose for training and evaluation: those
// they chose for the experiment directory dir when the run started. The
// managers' shims choose by files in the working directory and every
// directory above it, and a step's checkout lies inside the Researcher's
// worktree: a .python-version or rust-toolchain.toml there, or above the
// worktree where the Researcher writes, would otherwise have the fixed
// evaluation run under an interpreter, or a "toolchain" directory, of the
// Researcher's choosing. A variable, which the pins are, wins over every
// such file. A pin the user's environment already sets stays the user's.
func versionPins(ctx context.Context, path []string, dir string) []string {
	var pins []string
	pin := func(key string, manager []string, args ...string) {
		if _, set := os.LookupEnv(key); set || manager == nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, manager[0], append(manager[1:], args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+strings.Join(path, string(os.PathListSeparator)), "RUSTUP_AUTO_INSTALL=0")
		out, err := cmd.Output()
		if f := strings.Fields(string(out)); err == nil && len(f) > 0 {
			pins = append(pins, key+"="+f[0])
		}
	}
	pin("PYENV_VERSION", pyenv(path), "version-name")
	if rustupHome() {
		pin("RUSTUP_TOOLCHAIN", lookIn(path, "rustup"), "show", "active-toolchain")
	}
	return pins
}

// rustupHome says whether rustup is set up for this user. Where it is not,
// cargo's proxy finds no toolchain to run, and rustup asked which one it
// would choose would make its home in the user's.
func rustupHome() bool {
	dir := os.Getenv("RUSTUP_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		dir = filepath.Join(home, ".rustup")
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// pyenv is the pyenv command whose shims are on path: pyenv itself, or the
// one beside a shims directory (the shims run it by its own path, so it
// need not be on the PATH); nil when there is none.
func pyenv(path []string) []string {
	if p := lookIn(path, "pyenv"); p != nil {
		return p
	}
	for _, d := range path {
		if filepath.Base(d) != "shims" {
			continue
		}
		if p := filepath.Join(filepath.Dir(d), "libexec", "pyenv"); executable(p) {
			return []string{p}
		}
	}
	return nil
}

// lookIn is the command name found first on path, as a command line.
func lookIn(path []string, name string) []string {
	for _, d := range path {
		if p := filepath.Join(d, name); executable(p) {
			return []string{p}
		}
	}
	return nil
}

// executable says whether p is a regular file that someone may execute.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// localToolchain has go run the toolchain it is, whatever GOTOOLCHAIN the
// environment or a Go environment file names: with another, go downloads
// that toolchain, from the GOPROXY a setting names, and runs it.
const localToolchain = "GOTOOLCHAIN=local"

// checkoutToolEnv pins what tools would otherwise look for in the parents
// of a step's checkout, which lies inside the Researcher's worktree: Go's
// workspace file is the checkout's own, the first go.work between the
// experiment directory dir and the checkout's root, or none.
func checkoutToolEnv(dir, root string) []string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return []string{"GOWORK=" + filepath.Join(d, "go.work")}
		}
		if d == root || d == filepath.Dir(d) {
			return []string{"GOWORK=off"}
		}
	}
}

// maxToolchainFileBytes bounds what is read of a toolchain file.
const maxToolchainFileBytes = 1 << 20

// toolchainFilesAbove are the files by which version managers and cargo
// choose a toolchain (workspace.ToolchainFiles, .cargo/config.toml) in dir
// and in every directory above it, each with a digest of what it holds.
// The steps' checkouts lie below the supervisor's state directory, and the
// directories above the worktree may be the Researcher's to write (an
// experiment kept in /tmp): a file planted there is in no candidate, so no
// compliance check sees it, yet it chooses what runs the evaluation. The
// runner takes the set when the run starts and refuses a round after which
// it differs (plantedToolchains).
func toolchainFilesAbove(dir string) map[string]string {
	names := append(slices.Clone(workspace.ToolchainFiles), filepath.Join(".cargo", "config"), filepath.Join(".cargo", "config.toml"))
	found := map[string]string{}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		for _, n := range names {
			p := filepath.Join(d, n)
			data, err := workspace.ReadRegularFile(p, maxToolchainFileBytes)
			switch {
			case err == nil:
				found[p] = fmt.Sprintf("%x", sha256.Sum256(data))
			case !errors.Is(err, fs.ErrNotExist):
				found[p] = err.Error()
			}
		}
		if d == filepath.Dir(d) {
			return found
		}
	}
}

// toolchainsFile, in the state directory, keeps the toolchain files above
// the experiment as its first run found them.
const toolchainsFile = "toolchains.json"

// startingToolchains are the toolchain files above stateDir that every run
// of the experiment compares with: those its first run found and saved
// (saveToolchains), or, on the first run, those above stateDir now. Taken
// afresh at each start, they would accept on the next run, or after a
// resume, a file that a Researcher planted in this one.
func startingToolchains(stateDir string) (map[string]string, error) {
	p := filepath.Join(stateDir, toolchainsFile)
	data, err := workspace.ReadRegularFile(p, maxToolchainFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return toolchainFilesAbove(stateDir), nil
	}
	if err != nil {
		return nil, err
	}
	var saved map[string]string
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return saved, nil
}

// saveToolchains keeps found in stateDir, unless an earlier run did.
func saveToolchains(stateDir string, found map[string]string) error {
	p := filepath.Join(stateDir, toolchainsFile)
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	data, err := json.Marshal(found)
	if err != nil {
		return err
	}
	return workspace.WriteFileAtomic(p, data)
}

// plantedToolchains says which toolchain files above stateDir differ from
// the set the experiment started with, as a compliance violation; "" when
// none does.
func plantedToolchains(stateDir string, start map[string]string) string {
	now := toolchainFilesAbove(stateDir)
	var changed []string
	for p, digest := range now {
		if start[p] != digest {
			changed = append(changed, p)
		}
	}
	for p := range start {
		if _, ok := now[p]; !ok {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	slices.Sort(changed)
	return fmt.Sprintf("files that choose the interpreter or toolchain of the evaluation changed above the experiment since it started: %s "+
		"(put them back as they were to go on; if you changed them yourself, remove %s to accept them as they are now)",
		strings.Join(changed, ", "), filepath.Join(stateDir, toolchainsFile))
}
