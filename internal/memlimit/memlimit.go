// Package memlimit gives the Go runtime a soft memory limit below the
// memory limit of the container it runs in, so that the garbage collector
// works harder as the heap nears it instead of the kernel killing the
// process when it is reached.
package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// FromCgroup is the memory limit of the cgroup this process runs in, in
// bytes, or 0 where it has none. root is the cgroup file system
// (/sys/fs/cgroup) and self the process's /proc/self/cgroup: cgroup v2's
// memory.max of the process's cgroup, or at root (a container's own
// cgroup namespace), or cgroup v1's memory.limit_in_bytes.
func FromCgroup(root string, self []byte) int64 {
	var files []string
	for line := range strings.SplitSeq(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			files = append(files, filepath.Join(root, p, "memory.max"))
		}
	}
	files = append(files, filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		// "max", or cgroup v1's page-rounded largest number: no limit.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}

// Set gives the runtime a soft memory limit of nine tenths of limit, and
// returns it (the rest is for what the runtime does not count: the
// binary, threads' C stacks); it sets none, and returns 0, where limit is 0 or GOMEMLIMIT
// names one already, which the runtime has taken.
func Set(limit int64, getenv func(string) string) int64 {
	if limit <= 0 || getenv("GOMEMLIMIT") != "" {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}
