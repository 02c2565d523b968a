// Package version holds the version the build stamped into the binaries:
// `git describe --tags --always --dirty` of the source they were built
// from, set with
//
//	-ldflags "-X github.com/autoresearch-dev/autoresearch-operator/internal/version.version=$(git describe --tags --always --dirty)"
//
// by `make build`, hack/image.sh and the release builds. A build without
// the stamp (go build, go run, go test) is "devel".
package version

// version is set at link time; see the package comment.
var version string

// Devel is the version of a build that was not stamped.
const Devel = "devel"

// String is the stamped version, or Devel.
func String() string {
	if version == "" {
		return Devel
	}
	return version
}
