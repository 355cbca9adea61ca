// Command nudgeflow is the one binary of nudgeflow: worker, bridge, local
// development environment and the tools people use (see `nudgeflow --help`).
package main

import (
	"fmt"
	"os"

	"github.com/nudgeflow/nudgeflow/internal/cli"
)

func main() {
	if err := cli.NewRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
