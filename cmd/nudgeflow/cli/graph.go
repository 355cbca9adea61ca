package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/nudgegraph"
)

func newGraphCommand() *cobra.Command {
	var format string
	var kf *kubeFlags
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Print a namespace's nudge graph (NudgeConfig) as Mermaid, Graphviz DOT or JSON",
		Long: `Prints the edges of the namespace's NudgeConfig with each edge's mode and gating
group. Components that no longer exist (stale references) are marked: "(missing)"
and dashed in Mermaid and DOT, "missing": true and "stale": true in JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := kf.resolve()
			if err != nil {
				return err
			}
			nc, err := nudgeconfigs.Get(cmd.Context(), c, ns)
			if err != nil {
				var batching *nudgeconfigs.BatchingError
				if !errors.As(err, &batching) {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
			}
			if nc == nil {
				return fmt.Errorf("namespace %s has no NudgeConfig (nudgeflow migrate -n %s creates one from build-nudges-ref)", ns, ns)
			}
			var comps mirrorv1alpha1.ComponentList
			if err := c.List(cmd.Context(), &comps, ctrlclient.InNamespace(ns)); err != nil {
				return fmt.Errorf("listing Components in %s: %w", ns, err)
			}
			exists := make(map[string]bool, len(comps.Items))
			for _, comp := range comps.Items {
				exists[comp.Name] = true
			}
			return nudgegraph.Render(cmd.OutOrStdout(), nudgegraph.Format(format), nudgegraph.View{
				Namespace: ns,
				Nudges:    nc.Spec.Nudges,
				Missing:   nudgegraph.Missing(nc.Spec.Nudges, func(n string) bool { return exists[n] }),
				Batching:  nc.Spec.Batching,
			})
		},
	}
	kf = addKubeFlags(cmd, false)
	names := make([]string, len(nudgegraph.Formats))
	for i, f := range nudgegraph.Formats {
		names[i] = string(f)
	}
	cmd.Flags().StringVar(&format, "format", string(nudgegraph.Mermaid), "output format: "+strings.Join(names, "|"))
	return cmd
}
