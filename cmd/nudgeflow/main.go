// Command nudgeflow is the binary that ships: worker, bridge and the tools people
// use on a cluster (see `nudgeflow --help`). The local development environment
// and the benchmark are the test module's nudgeflow-dev (test/cmd/nudgeflow-dev).
package main

import (
	"fmt"
	"os"

	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
)

func main() {
	if err := cli.NewRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
