// Package cli wires nudgeflow's subcommands. Flags follow kubectl (--kubeconfig,
// -n/--namespace) and the Temporal CLI (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE).
package cli

import (
	"github.com/spf13/cobra"
)

// NewRoot returns the `nudgeflow` command with every product subcommand; the
// dev binary (test/cmd/nudgeflow-dev) adds `dev` and `bench` to it.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "nudgeflow",
		Short:         "Orchestrates Konflux component nudges on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	logs := addLogFlags(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return logs.apply(cmd, cmd.ErrOrStderr())
	}
	root.AddCommand(newMigrateCommand(), newGraphCommand())
	root.AddCommand(newChangeGroupCommand(), newWorkerCommand(), newBridgeCommand(), newReceiverCommand())
	root.AddCommand(newTemporalCommand(), newDebugCommand())
	return root
}
