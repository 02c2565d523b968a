package vkprovider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

// TestMain lets the test binary be the agent that containerCommand
// re-executes.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == containerinit.Arg {
		fmt.Fprintln(os.Stderr, containerinit.Run(os.Args[2]))
		os.Exit(127)
	}
	os.Exit(m.Run())
}

// A volume mounted over a parent of another volume's source, as an
// emptyDir at /tmp over volumes that live under /tmp, hides nothing from
// the container.
func TestAMountMayHideTheSourceOfAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	base := t.TempDir()
	empty, data := filepath.Join(base, "empty"), filepath.Join(base, "data")
	for _, d := range []string{empty, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "file.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The shallower target is mounted first, and hides base/data.
	target := filepath.Join(t.TempDir(), "volume", "mnt")
	cmd, err := containerCommand(os.Args[0], containerinit.Spec{
		Argv:   []string{"cat", filepath.Join(target, "file.txt")},
		Env:    []string{"PATH=" + os.Getenv("PATH")},
		Mounts: []containerinit.Mount{{Source: data, Target: target, ReadOnly: true}, {Source: empty, Target: base}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "kept" {
		t.Errorf("the container read %q (%v), want the volume's file", out, err)
	}
}
