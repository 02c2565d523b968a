// Package containerinit is the container side of the process node: run
// as the first process of a fresh mount and PID namespace, it bind-mounts
// a container's volumes and executes the container's command. It is apart
// from the node agent, and a program of its own (cmd/process-kubelet-init),
// so that starting a container costs the exec of a small program: the
// agent re-executed as the init spent 50 ms of CPU per container in its
// Kubernetes clients' package initialization.
package containerinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Arg is the first argument with which the node agent executes the
// container init: in a fresh, private mount namespace it bind-mounts the
// container's volumes and then executes its command.
const Arg = "__process-kubelet-container-init"

// Mount makes Source, a host file or directory, visible at Target.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Spec is what the container init needs to become a container.
type Spec struct {
	Mounts []Mount  `json:"mounts"`
	Dir    string   `json:"dir,omitempty"`
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
}

// Run is the container side of the node agent's container command: called
// with the JSON spec in a private mount namespace, it mounts and executes
// the command, and returns only on failure.
func Run(specJSON string) error {
	var spec Spec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	if len(spec.Argv) == 0 {
		return errors.New("container has no command")
	}
	// Parents before children, as the kubelet orders a container's mounts.
	mounts := append([]Mount(nil), spec.Mounts...)
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(filepath.Clean(mounts[i].Target), "/") < strings.Count(filepath.Clean(mounts[j].Target), "/")
	})
	// Every source is opened before anything is mounted: a mount may hide
	// the source of another (an emptyDir at /tmp over volumes that live
	// under /tmp). The descriptors close at the exec.
	sources := make([]*os.File, len(mounts))
	for i, m := range mounts {
		f, err := os.OpenFile(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.Source, m.Target, err)
		}
		sources[i] = f
	}
	for i, m := range mounts {
		if err := bindMount(sources[i], m); err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.Source, m.Target, err)
		}
	}
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			return err
		}
		if err := os.Chdir(spec.Dir); err != nil {
			return err
		}
	}
	argv0, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return err
	}
	return syscall.Exec(argv0, spec.Argv, spec.Env)
}

// bindMount creates the mount point (a file for a file, a directory for a
// directory) and bind-mounts source, m.Source opened with O_PATH, over it.
func bindMount(source *os.File, m Mount) error {
	info, err := source.Stat()
	if err != nil {
		return err
	}
	if info.IsDir() {
		if err := os.MkdirAll(m.Target, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(m.Target); errors.Is(err, os.ErrNotExist) {
			f, err := os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", source.Fd()), m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	if m.ReadOnly {
		return syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_REC, "")
	}
	return nil
}

// lookPath resolves name against the container's PATH, not the agent's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: executable file not found in $PATH", name)
}
