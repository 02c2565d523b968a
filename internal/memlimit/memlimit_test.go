package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func write(t *testing.T, root, file, content string) {
	t.Helper()
	path := filepath.Join(root, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFromCgroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		self  string
		want  int64
	}{
		{"v2, the process's cgroup", map[string]string{"kubepods/pod1/c1/memory.max": "268435456\n", "memory.max": "max\n"}, "0::/kubepods/pod1/c1\n", 268435456},
		{"v2, a cgroup namespace", map[string]string{"memory.max": "268435456\n"}, "0::/\n", 268435456},
		{"v2, no limit", map[string]string{"memory.max": "max\n"}, "0::/\n", 0},
		{"v1", map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, "4:memory:/docker/abc\n", 536870912},
		{"v1, no limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, "4:memory:/\n", 0},
		{"no cgroup file system", nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for f, c := range tc.files {
				write(t, root, f, c)
			}
			if got := FromCgroup(root, []byte(tc.self)); got != tc.want {
				t.Errorf("FromCgroup = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSet(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	none := func(string) string { return "" }
	if got := Set(0, none); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("no limit: Set = %d, runtime limit %d; want none", got, debug.SetMemoryLimit(-1))
	}
	gomemlimit := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "100MiB"
		}
		return ""
	}
	if got := Set(256<<20, gomemlimit); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT: Set = %d, runtime limit %d; want GOMEMLIMIT's left alone", got, debug.SetMemoryLimit(-1))
	}
	want := int64(256<<20) / 10 * 9
	if got := Set(256<<20, none); got != want || debug.SetMemoryLimit(-1) != want {
		t.Errorf("Set = %d, runtime limit %d; want %d", got, debug.SetMemoryLimit(-1), want)
	}
}
