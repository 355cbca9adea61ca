// Command nudgeflow-dev is nudgeflow's development binary: every command of the
// shipped `nudgeflow` (worker, bridge, temporal, ...) plus `dev` (the local stack
// of `make run`) and `bench` (`make bench`). It carries the product's commands
// because the local stack and the bench start the bridge and the worker as
// children of this same binary.
package main

import (
	"fmt"
	"os"

	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

func main() {
	// `nudgeflow-dev dev` starts its servers through this binary so they die with it.
	localenv.HandleParentDeathExec(os.Args)
	root := cli.NewRoot()
	root.Use = "nudgeflow-dev"
	root.AddCommand(newDevCommand(), newBenchCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
