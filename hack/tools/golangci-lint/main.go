// Command golangci-lint is golangci-lint with the kube-api-linter module
// plugin compiled in.
//
// It is what `golangci-lint custom` builds from .custom-gcl.yml, written out
// by hand: `custom` clones golangci-lint from GitHub, while this builds from
// the module proxy alone. The versions of both are pinned in this module's
// go.mod; `make golangci-lint` installs the binary into bin/.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Module plugins register themselves with
	// github.com/golangci/plugin-module-register when imported.
	_ "sigs.k8s.io/kube-api-linter"
)

func main() {
	info := commands.BuildInfo{Version: "unknown", Commit: "?", Date: "(unknown)", GoVersion: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		var kal string
		for _, dep := range bi.Deps {
			switch dep.Path {
			case "github.com/golangci/golangci-lint/v2":
				info.Version = strings.TrimPrefix(dep.Version, "v")
			case "sigs.k8s.io/kube-api-linter":
				kal = dep.Version
			}
		}
		info.Commit = "kube-api-linter " + kal
	}

	if err := commands.Execute(info); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "The command is terminated due to an error: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}
