package runner

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockExperiment holds an exclusive lock on the experiment file for as
// long as this process runs the experiment, and returns its release. Two
// runners of one experiment would each prepare, judge and commit rounds in
// the one worktree, each taking the other's steps for a Researcher's doing.
func lockExperiment(x *Experiment) (func(), error) {
	f, err := os.Open(x.File)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another `autoresearch run` is running %s (%s): let it finish, or stop it with Ctrl-C, before running it again", x.Object.Name, x.File)
		}
		return nil, fmt.Errorf("locking %s: %w", x.File, err)
	}
	return func() { _ = f.Close() }, nil
}
