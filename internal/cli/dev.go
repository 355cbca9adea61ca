package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newDevCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Start the whole system locally on embedded defaults",
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "nudgeflow dev is not built yet. What exists today:")
			fmt.Fprintln(out, "  - make tools   builds kube-apiserver, etcd, kubectl and the Temporal CLI into the tool cache")
			fmt.Fprintln(out, "  - make test    runs the suite against a real control plane and a real Temporal dev server")
			fmt.Fprintln(out, "Still to come (see the open issues): worker, bridge, GitHub emulator, seeded demo namespace.")
			return nil
		},
	}
}
