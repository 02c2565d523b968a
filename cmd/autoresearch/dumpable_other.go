//go:build !linux

package main

// undumpable does nothing where the kernel has no PR_SET_DUMPABLE; the
// step wrapper runs on Linux nodes.
func undumpable() error { return nil }

// dumpable reports true: nothing made the process undumpable.
func dumpable() (bool, error) { return true, nil }
