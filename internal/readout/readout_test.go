package readout

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/gittest"
)

func TestMain(m *testing.M) {
	gittest.Isolate()
	os.Exit(m.Run())
}

// binary holds every byte value, newlines and carriage returns among them.
func binary() []byte {
	b := make([]byte, 0, 3*256)
	for i := range 3 * 256 {
		b = append(b, byte(i*7))
	}
	return b
}

func TestFrameRoundTrips(t *testing.T) {
	var log bytes.Buffer
	log.WriteString("a line the container printed first\n")
	w, err := NewWriter(&log)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("bin", binary()); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("empty", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Fail("gone", os.ErrNotExist, true); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		if len(line) > lineWidth && !strings.HasPrefix(line, "autoresearch-readout") && !strings.HasPrefix(line, "a line") {
			t.Fatalf("a line of %d characters: the log would keep it whole, but not every log path does", len(line))
		}
	}
	entries, err := Read(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := entries.Get("bin"); err != nil || !bytes.Equal(got, binary()) {
		t.Errorf("bin = %v, %v; want every byte back", got, err)
	}
	if got, err := entries.Get("empty"); err != nil || len(got) != 0 {
		t.Errorf("empty = %q, %v", got, err)
	}
	var ie *ItemError
	if _, err := entries.Get("gone"); !errors.As(err, &ie) || !ie.Missing {
		t.Errorf("gone: %v, want a missing item", err)
	}
	if _, err := entries.Get("never"); err == nil {
		t.Error("an item the output lacks reads without error")
	}
}

func TestReadRefusesDamagedOutput(t *testing.T) {
	var log bytes.Buffer
	w, err := NewWriter(&log)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("bin", bytes.Repeat(binary(), 20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(log.String(), "\n")
	mid := len(lines) / 2
	cases := map[string]struct {
		log  string
		want string
	}{
		"nothing":          {"some other output\n", "holds no output"},
		"cut short":        {strings.Join(lines[:mid], ""), "ended after"},
		"a line lost":      {strings.Join(append(append([]string{}, lines[:mid]...), lines[mid+1:]...), ""), "incomplete"},
		"a stray line":     {strings.Join(append(append(append([]string{}, lines[:mid]...), "warning: something\n"), lines[mid:]...), ""), "not base64"},
		"a line corrupted": {strings.Join(append(append(append([]string{}, lines[:mid]...), strings.ToUpper(lines[mid])), lines[mid+1:]...), ""), "incomplete"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Read(strings.NewReader(tc.log)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]Request{
		"nothing":            {},
		"no name":            {Items: []Item{{File: "a"}}},
		"twice the name":     {Items: []Item{{Name: "a", File: "a"}, {Name: "a", File: "b"}}},
		"two things":         {Items: []Item{{Name: "a", File: "a", List: "b"}}},
		"absolute":           {Items: []Item{{Name: "a", File: "/etc/passwd"}}},
		"up":                 {Items: []Item{{Name: "a", List: "logs/../../etc"}}},
		"option as from":     {Items: []Item{{Name: "a", Diff: &Diff{GitDir: "source/.git", From: "--output=/tmp/x", To: "HEAD"}}}},
		"empty revision":     {Items: []Item{{Name: "a", Diff: &Diff{GitDir: "source/.git", From: "HEAD"}}}},
		"bundle, no name":    {Items: []Item{{Name: "a", Bundle: &Bundle{GitDir: "source/.git"}}}},
		"bundle outside":     {Items: []Item{{Name: "a", Bundle: &Bundle{GitDir: "../x", Experiment: "e"}}}},
		"diff, no git dir":   {Items: []Item{{Name: "a", Diff: &Diff{Subdir: "exp", From: "A", To: "B"}}}},
		"bundle, no git dir": {Items: []Item{{Name: "a", Bundle: &Bundle{Experiment: "e"}}}},
		"diff subdir up":     {Items: []Item{{Name: "a", Diff: &Diff{GitDir: "source/.git", Subdir: "../exp", From: "A", To: "B"}}}},
		"diff file upward":   {Items: []Item{{Name: "a", Diff: &Diff{GitDir: "source/.git", From: "A", To: "B", Files: []string{"../../x"}}}}},
	}
	for name, req := range cases {
		if err := req.Validate(); err == nil {
			t.Errorf("%s: %+v passes", name, req)
		}
	}
	ok := Request{Items: []Item{{Name: "log", File: "logs/round-1/train.log"}, {Name: "d", Diff: &Diff{GitDir: "source/.git", Subdir: "exp", From: "A^", To: "A"}}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a good request is refused: %v", err)
	}
}

// volume lays out a workspace volume as the operator does: the source
// clone, the worktree on autoresearch/exp with one kept change, and logs.
func volume(t *testing.T) (vol, start, kept string) {
	vol = t.TempDir()
	repo := gittest.NewRepo(t, map[string]string{"exp/train.py": "lr = 0.1\n", "exp/eval.py": "print(1)\n"})
	if err := os.Rename(repo, filepath.Join(vol, "source")); err != nil {
		t.Fatal(err)
	}
	src, wt := filepath.Join(vol, "source"), filepath.Join(vol, "worktree")
	gittest.Git(t, src, "worktree", "add", "-q", "-b", "autoresearch/exp", wt)
	start = gittest.Git(t, wt, "rev-parse", "HEAD")
	gittest.WriteFiles(t, wt, map[string]string{"exp/train.py": "lr = 0.05\n", "exp/eval.py": "print(2)\n"})
	gittest.Git(t, wt, "commit", "-qam", "round 1")
	kept = gittest.Git(t, wt, "rev-parse", "HEAD")
	if err := os.MkdirAll(filepath.Join(vol, "logs", "round-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "logs", "round-1", "train.log"), binary(), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("not on the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(vol, "logs", "round-1", "eval.log")); err != nil {
		t.Fatal(err)
	}
	return vol, start, kept
}

func TestServeReadsTheVolume(t *testing.T) {
	vol, start, kept := volume(t)
	req := Request{Items: []Item{
		{Name: "train", File: "logs/round-1/train.log"},
		{Name: "escape", File: "logs/round-1/eval.log"},
		{Name: "missing", File: "logs/round-9/train.log"},
		{Name: "round", List: "logs/round-1"},
		{Name: "diff", Diff: &Diff{GitDir: "source/.git", Subdir: "exp", From: start, To: kept, Files: []string{"train.py"}}},
		{Name: "bundle", Bundle: &Bundle{GitDir: "source/.git", Experiment: "exp"}},
	}}
	// What a Researcher can do to the worktree while its step runs: point
	// its .git file at a repository of its own, with a forged branch and a
	// diff command of its choosing. The reader follows none of it.
	planted := gittest.RedirectWorktree(t, filepath.Join(vol, "worktree"), "autoresearch/exp", "exp/train.py", "lr = 99\n")
	var log bytes.Buffer
	if err := Serve(context.Background(), vol, req, &log); err != nil {
		t.Fatal(err)
	}
	entries, err := Read(&log)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := entries.Get("train"); err != nil || !bytes.Equal(got, binary()) {
		t.Errorf("train log = %v, %v", got, err)
	}
	if got, err := entries.Get("escape"); err == nil {
		t.Errorf("a symbolic link out of the volume was followed: %q", got)
	}
	var ie *ItemError
	if _, err := entries.Get("missing"); !errors.As(err, &ie) || !ie.Missing {
		t.Errorf("missing: %v, want a missing item", err)
	}
	if got, err := entries.Get("round"); err != nil || !strings.Contains(string(got), "train.log\n") {
		t.Errorf("round list = %q, %v", got, err)
	}
	got, err := entries.Get("diff")
	if err != nil || !strings.Contains(string(got), "+lr = 0.05") || strings.Contains(string(got), "eval.py") {
		t.Errorf("diff = %q, %v; want train.py's change alone", got, err)
	}
	data, err := entries.Get("bundle")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "exp.bundle")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, "", "clone", "-q", "-b", "autoresearch/exp", file, clone)
	if head := gittest.Git(t, clone, "rev-parse", "HEAD"); head != kept {
		t.Errorf("the bundle's branch is at %s, want %s (the forged commit is %s)", head, kept, planted.Forged)
	}
	if _, err := os.Stat(planted.Ran); err == nil {
		t.Error("the reader ran the diff command planted in the worktree's git directory")
	}
}

func TestServeRefusesABadRequest(t *testing.T) {
	var log bytes.Buffer
	err := Serve(context.Background(), t.TempDir(), Request{Items: []Item{{Name: "x", File: "../x"}}}, &log)
	if err == nil || log.Len() != 0 {
		t.Errorf("Serve: %v, output %q; want the request refused before any output", err, log.String())
	}
}

// TestServeReadsOnlyBoundedRegularFiles serves what training can leave in
// place of its log on the volume: a named pipe whose writer never comes,
// and a file larger than an item may be. Each is an item's error, at once.
func TestServeReadsOnlyBoundedRegularFiles(t *testing.T) {
	defer func(limit int64) { maxItemBytes = limit }(maxItemBytes)
	maxItemBytes = 1024
	vol := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(vol, "pipe.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "big.log"), bytes.Repeat([]byte("x"), 1025), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "fits.log"), bytes.Repeat([]byte("x"), 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var log bytes.Buffer
	go func() {
		done <- Serve(ctx, vol, Request{Items: []Item{{Name: "pipe", File: "pipe.log"}, {Name: "big", File: "big.log"}, {Name: "fits", File: "fits.log"}}}, &log)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the reader waits on the named pipe")
	}
	entries, err := Read(&log)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pipe", "big"} {
		if got, err := entries.Get(name); err == nil {
			t.Errorf("%s read as %d bytes, want an error", name, len(got))
		}
	}
	if got, err := entries.Get("fits"); err != nil || len(got) != 1024 {
		t.Errorf("fits: %d bytes, %v", len(got), err)
	}
}

// TestReadBoundsWhatAnItemExpandsTo reads a frame whose item, small in the
// log, expands past what an item may hold.
func TestReadBoundsWhatAnItemExpandsTo(t *testing.T) {
	var log bytes.Buffer
	w, err := NewWriter(&log)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add("bomb", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	defer func(limit int64) { maxItemBytes = limit }(maxItemBytes)
	maxItemBytes = 1024
	if entries, err := Read(&log); err == nil {
		t.Errorf("read %d bytes of the item, want an error", len(entries["bomb"].Data))
	}
}
