package vkprovider

import (
	"encoding/json"
	"os/exec"
	"syscall"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

// containerCommand returns the command that runs spec in its own mount and
// PID namespaces and process group. initPath is the container init: the
// process-kubelet-init program, or the agent's own executable, which runs
// it when given containerinit.Arg.
// As in a container runtime, the command is the namespace's first process:
// when it exits the kernel kills every process it left, also one in a
// session of its own.
func containerCommand(initPath string, spec containerinit.Spec) (*exec.Cmd, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(initPath, containerinit.Arg, string(data))
	// Go makes the new namespace's mounts private before the exec, so the
	// container's bind mounts never reach the host.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS, Setpgid: true}
	return cmd, nil
}
