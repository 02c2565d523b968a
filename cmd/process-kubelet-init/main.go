// Command process-kubelet-init becomes a container of the process node:
// process-kubelet starts it, with the container's spec, as the first
// process of the container's own mount and PID namespaces, where it mounts
// the container's volumes and executes the container's command.
package main

import (
	"fmt"
	"os"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != containerinit.Arg {
		fmt.Fprintf(os.Stderr, "usage: process-kubelet-init %s SPEC-JSON (process-kubelet runs it)\n", containerinit.Arg)
		os.Exit(2)
	}
	err := containerinit.Run(os.Args[2])
	fmt.Fprintln(os.Stderr, "process-kubelet-init:", err)
	os.Exit(127)
}
