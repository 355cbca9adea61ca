// Command nudgeflow is the one binary of nudgeflow: worker, bridge, local
// development environment and the tools people use (see `nudgeflow --help`).
package main

import (
	"fmt"
	"os"

	"github.com/nudgeflow/nudgeflow/internal/cli"
	"github.com/nudgeflow/nudgeflow/internal/localenv"
)

func main() {
	// `nudgeflow dev` starts its servers through this binary so they die with it.
	localenv.HandleParentDeathExec(os.Args)
	if err := cli.NewRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
