//go:build !linux

package runner

import "syscall"

// Without Linux's namespaces and subreaper, a step is its process group.
func chooseContainment() containment { return containProcessGroup }

func (c containment) addNamespaces(*syscall.SysProcAttr, bool, bool) {}

func probeMounts(containment) bool { return false }

func probeOffline(containment) bool { return false }

func (c containment) prepare() error { return nil }

func rootUserNamespace() bool { return false }

func ownSessionKeyring() error { return nil }

func machineSockets() []string { return nil }

func sweepOrphans() {}
