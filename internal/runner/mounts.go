package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/autoresearch-dev/autoresearch-operator/internal/supervisor"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// researcherMounts keep the machine read-only for the Researcher of round
// n but its home (researcherHome), where agents keep their state
// (researcherMachine), and give it temporary directories of its own
// (privateTemps); the user's repository and the supervisor's state
// directory too, and the git directory, as its pod has it on a cluster:
// git is the supervisor's, and a Researcher reads history but writes no
// object, ref, hook or configuration. It writes its
// worktree, the round's directory, where it writes its result file and
// transcripts, and its Go environment file. The ledger backup in the
// round's directory is read-only again. What it changes of the worktree's
// own git file is restored and fails compliance
// (supervisor.FinishResearch).
func (l *Local) researcherMounts(ctx context.Context, n int32) ([]Mount, error) {
	common, err := l.gitCommonDir(ctx)
	if err != nil {
		return nil, err
	}
	goEnv, err := l.researcherGoEnvFile()
	if err != nil {
		return nil, err
	}
	temps, err := researcherTemps(l.roundDir(n))
	if err != nil {
		return nil, err
	}
	mounts, err := l.hiding(append(append(l.researcherMachine(),
		Mount{Path: l.x.Repo, ReadOnly: true},
		Mount{Path: common, ReadOnly: true},
		Mount{Path: l.ws.Root},
		Mount{Path: l.ws.StateDir(), ReadOnly: true},
		Mount{Path: l.roundDir(n)},
		Mount{Path: supervisor.BackupDir(l.ws.StateDir(), n), ReadOnly: true},
		Mount{Path: goEnv},
	), l.homeAgain()...))
	if err != nil {
		return nil, err
	}
	return l.pinned(privateTemps(append(mounts, commandPaths(l.spec.Researcher.Command, mounts)...), temps)), nil
}

// homeAgain is the Researchers' home bound writable again after the
// experiment's mounts, when it is the experiment's own, which lies in the
// supervisor's state directory. A home of the user's choice lies outside
// the experiment (checkResearcherHome), writable already
// (researcherMachine), and is not bound again: the bind would uncover the
// tools in it.
func (l *Local) homeAgain() []Mount {
	if inside(l.home, l.x.Worktree) {
		return []Mount{{Path: l.home}}
	}
	return nil
}

// researcherHome is the Researchers' HOME: the directory
// Options.ResearcherHome names, or one of the experiment's own in the
// supervisor's state directory, which researcherEnv makes. The user's home
// is then read-only to them like the rest of the machine: no Researcher
// writes what the user's shells, git, Go or a later run read there.
func researcherHome(x *Experiment, opts Options) string {
	if opts.ResearcherHome != "" {
		return opts.ResearcherHome
	}
	return filepath.Join(x.StateDir(), "researcher-home")
}

// checkResearcherHome refuses, before anything runs, a Researcher home h
// (Options.ResearcherHome, "" for the default) that is no absolute path of
// a directory, or that lies, as named or as it resolves, in the
// repository or the worktree, which a Researcher may not write as a
// whole.
func checkResearcherHome(x *Experiment, h string) error {
	if h == "" {
		return nil
	}
	fi, err := os.Stat(h)
	if err != nil || !fi.IsDir() || !filepath.IsAbs(h) {
		return fmt.Errorf("researcher home %q: not the absolute path of a directory", h)
	}
	resolved, err := filepath.EvalSymlinks(h)
	if err != nil {
		return fmt.Errorf("researcher home %q: %w", h, err)
	}
	for _, d := range []string{x.Repo, x.Worktree} {
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			r = d
		}
		if inside(h, d) || inside(resolved, d) || inside(resolved, r) {
			return fmt.Errorf("researcher home %q: inside the repository or the worktree, which the Researcher may not write as a whole", h)
		}
	}
	return nil
}

// researcherEnv is what every Researcher runs with besides the round's:
// its own Go environment file (go env -w writes that, not the user's),
// its home, with the XDG directories in it unless it is the user's (Go's
// module and build caches among them: a Researcher's builds download what
// they need there), and, with the mounts, its own /tmp as TMPDIR.
func (l *Local) researcherEnv() ([]string, error) {
	if err := os.MkdirAll(l.home, 0o700); err != nil {
		return nil, err
	}
	env := append(researcherToolEnv(l.ws.StateDir()), "HOME="+l.home)
	if ReadOnlyMounts() {
		// Its own (privateTemps): a TMPDIR of the runner's in /tmp is
		// not there.
		env = append(env, "TMPDIR=/tmp")
	}
	if userHome, err := os.UserHomeDir(); err != nil || userHome != l.home {
		env = append(env,
			"XDG_CONFIG_HOME="+filepath.Join(l.home, ".config"),
			"XDG_CACHE_HOME="+filepath.Join(l.home, ".cache"),
			"XDG_DATA_HOME="+filepath.Join(l.home, ".local", "share"),
			"XDG_STATE_HOME="+filepath.Join(l.home, ".local", "state"))
	}
	return env, nil
}

// researcherMachine is the machine as a Researcher sees it: read-only but
// its home, and there read-only again the tools that training and
// evaluation run (toolDirs), so that no Researcher changes the interpreter
// or toolchain that measures it. Its temporary directories are its own
// (privateTemps).
func (l *Local) researcherMachine() []Mount {
	mounts := []Mount{theMachine}
	if l.home != "" && l.home != "/" {
		mounts = append(mounts, Mount{Path: l.home})
	}
	for _, d := range l.tools {
		mounts = append(mounts, Mount{Path: d, ReadOnly: true})
	}
	return mounts
}

// researcherTemps makes, fresh, the Researcher's own temporary directories
// for the step that logs in logs: one for each of the machine's
// (machineTemps), in a directory of logs that removeTemps removes.
func researcherTemps(logs string) (map[string]string, error) {
	root := filepath.Join(logs, "temp")
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	temps := map[string]string{}
	for i, t := range machineTemps() {
		src := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(src, 0o1777); err != nil {
			return nil, err
		}
		// The mode a umask took away: agents and tools of other users
		// write /tmp.
		if err := os.Chmod(src, 0o1777); err != nil {
			return nil, err
		}
		temps[t] = src
	}
	return temps, nil
}

// removeTemps removes, once the Researcher that logs in logs is done, what
// researcherTemps made for it and what the Researcher left there; what it
// cannot remove it warns of.
func (l *Local) removeTemps(logs string) {
	if err := os.RemoveAll(filepath.Join(logs, "temp")); err != nil {
		l.out.warn(fmt.Sprintf("the Researcher's temporary directories: %v", err))
	}
}

// privateTemps gives the Researcher its own temporary directories: each of
// the machine's is veiled (Mount.Veil) by its source in temps, which the
// Researcher writes, with only the paths of mounts that lie in it kept in
// sight — the experiment's, its home, its tools — and made there. What a
// Researcher leaves in a temporary directory, a model it trained while it
// thought or a file for its candidate to read, training never reads: it
// sees the machine's, which the Researcher never wrote, and a kept commit
// gives its number anywhere. A path to hide that lies there, and in no
// kept path, is gone with the rest, not even its name left (a holdout's
// directory in /tmp). The veils come just after the machine's mount,
// before the mounts whose paths they keep.
func privateTemps(mounts []Mount, temps map[string]string) []Mount {
	var veils []Mount
	for _, t := range slices.Sorted(maps.Keys(temps)) {
		in := func(p string) (string, bool) {
			r, err := filepath.EvalSymlinks(p)
			return r, err == nil && r != t && inside(r, t)
		}
		var keeps []string
		for _, m := range mounts {
			if r, ok := in(m.Path); ok && !m.Machine && m.Hide == "" {
				keeps = append(keeps, r)
			}
		}
		mounts = slices.DeleteFunc(mounts, func(m Mount) bool {
			r, ok := in(m.Path)
			return ok && m.Hide != "" && !slices.ContainsFunc(keeps, func(k string) bool { return inside(r, k) })
		})
		for _, m := range mounts {
			if r, ok := in(m.Hide); ok {
				keeps = append(keeps, r)
			}
		}
		slices.SortFunc(keeps, byDepth)
		var kept []string
		for _, k := range keeps {
			if !slices.ContainsFunc(kept, func(d string) bool { return inside(k, d) }) {
				kept = append(kept, k)
				veils = append(veils, Mount{Path: k, Keep: true})
			}
		}
		veils = append(veils, Mount{Path: t, Veil: true, Source: temps[t]})
	}
	return slices.Insert(mounts, 1, veils...)
}

// commandPaths are the files and directories that command names by their
// absolute path in one of the machine's temporary directories (a script,
// `sh /tmp/agent.sh`), but in none of the mounts: the Researcher, whose
// temporary directories are its own (privateTemps), sees them there
// read-only.
func commandPaths(command string, mounts []Mount) []Mount {
	var paths []Mount
	words := strings.FieldsFunc(command, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(";&|()<>`=\"'", r)
	})
	temps := machineTemps()
	for _, w := range words {
		r, err := filepath.EvalSymlinks(w)
		if err != nil || !filepath.IsAbs(w) ||
			!slices.ContainsFunc(temps, func(t string) bool { return r != t && inside(r, t) }) ||
			slices.ContainsFunc(slices.Concat(mounts, paths), func(m Mount) bool { return !m.Machine && inside(w, m.Path) }) {
			continue
		}
		paths = append(paths, Mount{Path: w, ReadOnly: true})
	}
	return paths
}

// machineTemps are the machine's temporary directories, each as it
// resolves, once.
func machineTemps() []string {
	var dirs []string
	for _, d := range []string{"/tmp", "/var/tmp"} {
		if r, err := filepath.EvalSymlinks(d); err == nil && r != "/" && !slices.Contains(dirs, r) {
			if fi, err := os.Stat(r); err == nil && fi.IsDir() {
				dirs = append(dirs, r)
			}
		}
	}
	return dirs
}

// pinned adds to a Researcher's mounts a pin (Mount.Pin) of every
// directory between one it writes — its home, the temporary directories,
// and what its mounts make writable, the worktree among them — and the
// path of a mount: a directory that holds mount points can be moved,
// mounts and all, and a Researcher that moved the one holding a tool, the
// repository, the worktree, the holdout or the supervisor's state (in the
// worktree's experiment directory, which the Researcher writes) would put
// a copy of its own at their paths, which the steps and the supervisor
// then use. The pins come last, shallowest first, and keep every mount
// below them as it is.
func (l *Local) pinned(mounts []Mount) []Mount {
	writable := resolvedWritable(l.home)
	for _, m := range mounts {
		if m.Machine || m.ReadOnly || m.Hide != "" || m.Pin || m.Keep || m.Veil {
			continue
		}
		if p, err := filepath.EvalSymlinks(m.Path); err == nil {
			writable = append(writable, p)
		}
	}
	var pins []string
	for _, m := range mounts {
		p, err := filepath.EvalSymlinks(m.Path)
		if err != nil || m.Machine {
			continue
		}
		for _, w := range writable {
			if p == w || !inside(p, w) {
				continue
			}
			for a := filepath.Dir(p); a != w && inside(a, w); a = filepath.Dir(a) {
				pins = append(pins, a)
			}
		}
	}
	slices.SortFunc(pins, byDepth)
	for _, a := range slices.Compact(pins) {
		mounts = append(mounts, Mount{Path: a, Pin: true})
	}
	return mounts
}

// byDepth orders paths shallowest first, and by name among the same depth.
func byDepth(a, b string) int {
	if c := strings.Count(a, string(filepath.Separator)) - strings.Count(b, string(filepath.Separator)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// researcherGoEnvFile is the Researchers' Go environment file, created
// empty when missing: a file is mounted only where it exists.
func (l *Local) researcherGoEnvFile() (string, error) {
	goEnv := researcherGoEnv(l.ws.StateDir())
	f, err := os.OpenFile(goEnv, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	return goEnv, f.Close()
}

// stepMounts keep the whole machine read-only for training, evaluation
// and the parity check — the user's repository, and the interpreters,
// toolchains and caches that a later evaluation runs — hide the
// repository's git directory and veil the worktree, with the supervisor's
// state, the ledger and the logs in it (veilWorktree), but run, the step's
// own checkout, and its scratch for the kind of step (stepScratch), which
// env points its tools at; and hide the holdout (hiding).
func (l *Local) stepMounts(ctx context.Context, run, kind string) (mounts []Mount, env []string, err error) {
	mounts, env, err = l.experimentMounts(ctx, run, kind)
	if err != nil {
		return nil, nil, err
	}
	mounts, err = l.hiding(mounts)
	// What lies in the worktree is hidden with it already (veilWorktree).
	return slices.DeleteFunc(mounts, func(m Mount) bool { return m.Hide != "" && inside(m.Path, l.ws.Root) }), env, err
}

// experimentMounts are stepMounts without the holdout hidden, and with
// readOnly read-only too.
func (l *Local) experimentMounts(ctx context.Context, run, kind string, readOnly ...string) ([]Mount, []string, error) {
	common, err := l.gitCommonDir(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := l.stepScratch(run, kind)
	if err != nil {
		return nil, nil, err
	}
	mounts := []Mount{theMachine}
	// Before the experiment's: what of it lies in one stays read-only. The
	// holdout writes none of them: what it left there, with the holdout's
	// data in it, a later Researcher would read.
	for _, p := range l.opts.Writable {
		if kind != cacheHoldout && kind != cacheHoldoutCandidate {
			mounts = append(mounts, Mount{Path: p})
		}
	}
	empty, emptyDir, err := l.hidden()
	if err != nil {
		return nil, nil, err
	}
	// The git directory holds every candidate the supervisor sealed, kept
	// or not: a step that read a rolled-back one's files would measure
	// what its own candidate does not hold. No step needs git.
	mounts = append(mounts, Mount{Path: l.x.Repo, ReadOnly: true}, Mount{Path: common, Hide: emptyDir})
	mounts = append(mounts, l.veilWorktree(run, s, empty, emptyDir)...)
	for _, p := range readOnly {
		mounts = append(mounts, Mount{Path: p, ReadOnly: true})
	}
	if kind == cacheHoldout || kind == cacheHoldoutCandidate {
		// The holdout's state lies in its directory: the values every
		// holdout printed (holdout.json), the logs, the other candidates'
		// checkouts, other experiments' state. Candidate code printed
		// those values with the data at hand; a later holdout that read
		// them would get back what an earlier one noted there.
		mounts = append(mounts, veil(filepath.Join(l.spec.Holdout.Dir, ".autoresearch"), run, s.tmp, s.cache, empty, emptyDir)...)
	}
	return append(mounts,
		Mount{Path: run},
		Mount{Path: s.tmp},
		Mount{Path: s.cache},
	), scratchEnv(s), nil
}

// veilWorktree hides the worktree from a step that runs the experiment's
// code, but the step's own checkout and scratch: the Researcher writes the
// worktree, and what it leaves there outside the candidate — a file git
// ignores, which the seal leaves out; its round's directory; the copies of
// the candidates of rounds started early — the step would read by path,
// and a kept commit would then not give the measured number anywhere else.
// The rest of the supervisor's state is hidden with it, but the empty file
// and directory that hiding binds.
func (l *Local) veilWorktree(run string, s scratch, empty, emptyDir string) []Mount {
	return veil(l.ws.Root, run, s.tmp, s.cache, empty, emptyDir)
}

// veil hides the directory root from a step but the paths of keep that
// lie in it and exist.
func veil(root string, keep ...string) []Mount {
	var keeps []string
	for _, p := range keep {
		if !inside(p, root) || slices.ContainsFunc(keeps, func(k string) bool { return inside(p, k) }) {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			keeps = append(keeps, p)
		}
	}
	var mounts []Mount
	for _, p := range keeps {
		mounts = append(mounts, Mount{Path: p, Keep: true})
	}
	return append(mounts, Mount{Path: root, Veil: true})
}

// scratch is where a step that runs the experiment's code writes besides
// its checkout: a temporary directory of its own, and the tool caches of
// its kind of step.
type scratch struct{ tmp, cache string }

// stepScratch makes the scratch of the step with checkout run: a fresh
// temporary directory beside it, and the caches of its kind, which only
// steps of one kind share — training's, the evaluation's, the holdout's —
// so that no training run leaves anything in a cache that an evaluation
// reads. Training's and the holdout's are the experiment's own. The
// evaluation's is shared with every experiment of this user that has the
// same fixed files and evaluation command (evalCache), which no other
// kind of step and no Researcher writes: an evaluation builds what the one
// before built. Training's and the holdout's are written only by the steps
// that run the code the experiment started from: a step that runs a
// candidate's code (cacheCandidate, cacheHoldoutCandidate) gets a copy of
// its kind's beside its checkout, which nothing after it reads, since what
// such a step writes there — a compiled program's cached executable
// changed in place — a later round's step would run for code that does
// not hold it.
func (l *Local) stepScratch(run, kind string) (scratch, error) {
	s := scratch{tmp: run + ".tmp", cache: filepath.Join(l.ws.StateDir(), "cache", kind)}
	switch kind {
	case cacheHoldout:
		s.cache = filepath.Join(l.x.HoldoutStateDir(), "cache")
	case cacheEval:
		if root, err := sharedCacheRoot(); err == nil {
			s.cache = filepath.Join(root, cacheEval, l.evalCache())
		}
	}
	// A candidate's copy of training's cache, or of the holdout's.
	seed := map[string]string{
		cacheCandidate:        filepath.Join(l.ws.StateDir(), "cache", cacheTrain),
		cacheHoldoutCandidate: filepath.Join(l.x.HoldoutStateDir(), "cache"),
	}[kind]
	if seed != "" {
		s.cache = run + ".cache"
	}
	for _, dir := range []string{s.tmp, run + ".cache"} {
		if err := os.RemoveAll(dir); err != nil {
			return s, err
		}
	}
	if err := os.MkdirAll(s.tmp, 0o700); err != nil {
		return s, err
	}
	if seed != "" {
		return s, copyCache(seed, s.cache)
	}
	return s, os.MkdirAll(s.cache, 0o700)
}

// copyCache copies the directories and regular files of the cache from
// into to, a new directory; from may be missing.
func copyCache(from, to string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	// Training of the start may write the cache meanwhile (a round
	// started early checks its candidates' kernels while the baseline
	// trains): what it removes in the while is not copied.
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || path == from {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dest := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(dest, 0o700)
		case d.Type().IsRegular():
			return copyFile(path, dest)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// scratchEnv points a step's tools at its scratch s: temporary files, Go's
// build cache, and the caches of the compilers that name their own (CUDA's
// and Triton's), since the rest of the machine is read-only to the step.
// AUTORESEARCH_CACHE_DIR is there for the other tools a user points at it.
func scratchEnv(s scratch) []string {
	return []string{
		"TMPDIR=" + s.tmp,
		"AUTORESEARCH_CACHE_DIR=" + s.cache,
		"GOCACHE=" + filepath.Join(s.cache, "go-build"),
		"CUDA_CACHE_PATH=" + filepath.Join(s.cache, "nv"),
		"TRITON_CACHE_DIR=" + filepath.Join(s.cache, "triton"),
	}
}

// sharedCacheRoot is the directory of the caches that experiments share,
// made when missing: it is read-only to Researchers (toolDirs).
func sharedCacheRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "autoresearch")
	return dir, os.MkdirAll(dir, 0o700)
}

// evalCache names the evaluation's shared cache by what the evaluation
// runs: the fixed files' sums and the command.
func (l *Local) evalCache() string {
	var b strings.Builder
	for _, f := range l.workspaceStatus().FixedFileHashes {
		b.WriteString(f.Path + "\x00" + f.SHA256 + "\n")
	}
	sum := sha256.Sum256([]byte(b.String() + "\x00" + l.spec.Eval.Command))
	return hex.EncodeToString(sum[:])[:16]
}

// The kinds of step that share a cache.
const (
	cacheTrain   = "train"
	cacheEval    = "eval"
	cacheHoldout = "holdout"
	// cacheCandidate is training's cache for a step that runs a
	// candidate's code, and cacheHoldoutCandidate the holdout's: a copy of
	// its own (stepScratch).
	cacheCandidate        = "candidate"
	cacheHoldoutCandidate = "holdout-candidate"
)

// hiding adds to mounts the user's credentials hidden (credentialMounts)
// and, when the experiment has a hidden holdout, which no step but the
// holdout's may read or write, an empty file bound over the experiment
// file, which names it, and an empty directory bound over
// spec.holdout.dir, which holds its command, data, state and logs.
func (l *Local) hiding(mounts []Mount) ([]Mount, error) {
	mounts, err := l.credentialMounts(mounts)
	if err != nil || l.spec.Holdout == nil {
		return mounts, err
	}
	empty, emptyDir, err := l.hidden()
	if err != nil {
		return nil, err
	}
	return append(mounts, Mount{Path: l.x.File, Hide: empty}, Mount{Path: l.spec.Holdout.Dir, Hide: emptyDir}), nil
}

// hidden are the empty file and the empty directory that Hide mounts bind.
func (l *Local) hidden() (empty, emptyDir string, err error) {
	empty = filepath.Join(l.ws.StateDir(), "hidden")
	if err := os.WriteFile(empty, nil, 0o444); err != nil && !errors.Is(err, os.ErrPermission) {
		return "", "", err
	}
	emptyDir = filepath.Join(l.ws.StateDir(), "hidden-dir")
	return empty, emptyDir, os.MkdirAll(emptyDir, 0o555)
}

// userCredentials are where, in the user's home, keys, tokens and the
// configurations of clouds and clusters are kept: an SSH key pushes to
// the user's remotes, a token signs in as the user.
var userCredentials = []string{
	".ssh", ".gnupg", ".git-credentials", ".config/git/credentials", ".netrc", ".config/gh",
	".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".cache/huggingface/token",
}

// credentialMounts adds to mounts the user's credentials (userCredentials)
// hidden, each that exists: the machine is read-only to a step, not out of
// its sight, and a Researcher or candidate code with the network would
// otherwise read the user's SSH key and push with it, or put it in a
// candidate that the supervisor's own push sends to the user's remote.
// What training needs, a dataset's token say, the experiment gives it in
// its environment (spec.train.env).
func (l *Local) credentialMounts(mounts []Mount) ([]Mount, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return mounts, nil
	}
	empty, emptyDir := "", ""
	for _, c := range userCredentials {
		p := filepath.Join(home, filepath.FromSlash(c))
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if empty == "" {
			if empty, emptyDir, err = l.hidden(); err != nil {
				return nil, err
			}
		}
		if fi.IsDir() {
			mounts = append(mounts, Mount{Path: p, Hide: emptyDir})
		} else {
			mounts = append(mounts, Mount{Path: p, Hide: empty})
		}
	}
	return mounts, nil
}

// researcherWritable are the directories a Researcher writes outside the
// experiment: its home, where agents keep their settings and sessions
// (researcherHome), and the machine's temporary directories.
func researcherWritable(home string) []string {
	var dirs []string
	if home != "" && home != "/" {
		dirs = append(dirs, home)
	}
	for _, d := range []string{"/tmp", "/var/tmp"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// stepPath is the PATH of every step: this binary's directory, so that a
// Researcher command can call `autoresearch`, then the runner's PATH. Each
// directory is named as it resolves when the run starts: a Researcher that
// points a link on the PATH elsewhere changes no step's PATH. A relative
// entry (".", or an empty one) is dropped: it would name the step's
// checkout, which the candidate writes; where steps get mounts, so is a
// directory that Researchers write as a whole (/tmp, their home), which
// no mount can keep read-only to them. So is a missing directory, but
// where makeMissing (steps get mounts) a missing directory inside one that
// Researchers write (researcherWritable, with their home) is made, empty,
// so that it is a tool directory read-only to them, not theirs to create
// and fill with a python3 that a later run finds.
func stepPath(makeMissing bool, home string) []string {
	entries := filepath.SplitList(os.Getenv("PATH"))
	if self, err := os.Executable(); err == nil {
		entries = append([]string{filepath.Dir(self)}, entries...)
	}
	writable := researcherWritable(home)
	resolved := resolvedWritable(home)
	var path []string
	for _, e := range entries {
		if !filepath.IsAbs(e) {
			continue
		}
		d, err := filepath.EvalSymlinks(e)
		below := func(w string) bool { return e != w && inside(e, w) }
		if err != nil && makeMissing && slices.ContainsFunc(writable, below) && os.MkdirAll(e, 0o755) == nil {
			d, err = filepath.EvalSymlinks(e)
		}
		if err == nil && !slices.Contains(path, d) && (!makeMissing || !slices.Contains(resolved, d)) {
			path = append(path, d)
		}
	}
	return path
}

// resolvedWritable are the directories that Researchers with home write
// (researcherWritable), each as it resolves.
func resolvedWritable(home string) []string {
	var dirs []string
	for _, w := range researcherWritable(home) {
		if w, err := filepath.EvalSymlinks(w); err == nil {
			dirs = append(dirs, w)
		}
	}
	return dirs
}

// toolDirs are the directories of the tools that training and evaluation
// run which lie where a Researcher with home writes (researcherWritable):
// those on the steps' PATH, the caches experiments share
// (sharedCacheRoot), Go's root, module cache and build cache, and the
// prefixes and site-packages of the Python interpreters on the PATH — a
// pyenv or a virtual environment in the user's home, say. Tools a step
// finds another way are not among them.
func toolDirs(ctx context.Context, path []string, home string) []string {
	found := slices.Clone(path)
	if root, err := sharedCacheRoot(); err == nil {
		found = append(found, root)
	}
	for _, argv := range [][]string{
		{"go", "env", "GOROOT", "GOMODCACHE", "GOCACHE"},
		{"python3", "-I", "-c", pythonDirs},
		{"python", "-I", "-c", pythonDirs},
	} {
		tool := lookPath(argv[0], path)
		if tool == "" {
			continue
		}
		cmd := exec.CommandContext(ctx, tool, argv[1:]...)
		cmd.Env = append(os.Environ(), "PATH="+strings.Join(path, string(os.PathListSeparator)), localToolchain)
		if out, err := cmd.Output(); err == nil {
			found = append(found, strings.Split(strings.TrimSpace(string(out)), "\n")...)
		}
	}
	writable := resolvedWritable(home)
	var dirs []string
	for _, d := range found {
		d, err := filepath.EvalSymlinks(d)
		if err != nil || !filepath.IsAbs(d) || slices.Contains(dirs, d) {
			continue
		}
		for _, w := range writable {
			// A tool directory that is the whole of one would leave the
			// Researcher nowhere to write.
			if d != w && inside(d, w) {
				dirs = append(dirs, d)
				break
			}
		}
	}
	return dirs
}

// lookPath is the file that a step finds for the command name on path,
// as steps name it, or "" when none: a tool tells where it lies by the
// path it is started from (a virtual environment's python3 by its
// pyvenv.cfg beside it).
func lookPath(name string, path []string) string {
	for _, d := range path {
		f := filepath.Join(d, name)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return f
		}
	}
	return ""
}

// pythonDirs prints an interpreter's prefixes and site packages.
const pythonDirs = `import site, sys
print("\n".join([sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix] + site.getsitepackages()))`

// inside reports whether path is dir or lies below it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

// gitCommonDir is the repository's git directory, which need not be in the
// repository's working tree.
func (l *Local) gitCommonDir(ctx context.Context) (string, error) {
	out, err := workspace.Git(ctx, l.ws.Root, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	return strings.TrimSpace(out), err
}
