//go:build linux

package main

import "golang.org/x/sys/unix"

// undumpable makes this process undumpable: a process of the same user
// without CAP_SYS_PTRACE can then neither trace it nor read or write its
// memory and descriptors through /proc. The step wrapper runs beside the
// candidate's code (kernel parity, training) as the same user, and writes
// the step's result; that code must not reach into it.
func undumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// dumpable reports whether this process is dumpable.
func dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}
