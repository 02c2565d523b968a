// Command stamped prints the version it was linked with; version_test.go
// builds it.
package main

import (
	"fmt"

	"github.com/autoresearch-dev/autoresearch-operator/internal/version"
)

func main() { fmt.Print(version.String()) }
