package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// lockExperiment holds an exclusive lock on the experiment for as long as
// this process runs it, and returns its release. Two runners of one
// experiment would each prepare, judge and commit rounds in the one
// worktree, each taking the other's steps for a Researcher's doing. The
// lock is a file named after the experiment in the repository's git
// directory, where its branch is: the experiment file itself would do
// only until an editor saved it by renaming another file over it.
func lockExperiment(x *Experiment) (func(), error) {
	repo, err := workspace.RepositoryOf(context.Background(), x.Repo)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(repo.GitDir, "autoresearch-"+x.Object.Name+".lock"), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another `autoresearch run` is running %s (%s): let it finish, or stop it with Ctrl-C, before running it again", x.Object.Name, x.File)
		}
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { _ = f.Close() }, nil
}
