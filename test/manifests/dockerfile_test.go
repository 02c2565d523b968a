package manifests

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pinnedImage is an image reference with the digest of its content.
var pinnedImage = regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9._-]+)?@sha256:[0-9a-f]{64}$`)

// Every base image of the Dockerfile is pinned by digest: a tag moved
// upstream must not change what a release is built from.
func TestDockerfileBaseImagesArePinned(t *testing.T) {
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	stages := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		stages++
		image := ""
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "--") {
				image = f
				break
			}
		}
		if !pinnedImage.MatchString(image) {
			t.Errorf("Dockerfile:%d: FROM %q is not pinned by digest (name:tag@sha256:…)", line, image)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if stages == 0 {
		t.Fatal("the Dockerfile has no FROM")
	}
}
