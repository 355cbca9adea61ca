package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nudgeflow/nudgeflow/internal/migrate"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

func newMigrateCommand() *cobra.Command {
	var outputDir, gitopsDir, to string
	var dryRun bool
	var kf *kubeFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Migrate build-nudges-ref of Components into the namespace's NudgeConfig (ADR 67)",
		Long: `Reads spec.build-nudges-ref of the Components of a namespace (-n) or of all
namespaces (-A) and builds each namespace's NudgeConfig with mode immediate, merged
with an existing NudgeConfig (its entries and their modes are kept). The graph is
checked with the admission webhook's rules: a cycle is reported and that namespace is
not migrated; a reference to a component that does not exist (dangling) is reported
and left out.

Without --output-dir the NudgeConfig is written to the cluster with server-side apply
(field manager nudgeflow-migrate); a run that adds nothing writes nothing. Components
on the cluster are not changed. build-service stops nudging a namespace once
integration-service's NudgeConfig (appstudio.redhat.com/v1beta2) exists there; beside
nudgeflow's own kind it goes on nudging what build-nudges-ref names, and the bridge
leaves those edges to it (--nudging-peers) until the field is removed, for which
--gitops-dir writes the Components without it.

With --output-dir DIR nothing is written to the cluster; DIR/<namespace>/ receives
nudgeconfig.yaml and, for each file under --gitops-dir holding a Component of that
namespace with build-nudges-ref, a patched copy without the field (component-*.yaml),
plus MIGRATION.txt naming the file each copy replaces. The folder applies as is:
  kubectl apply -n <namespace> -f DIR/<namespace>

--to chooses the kind written: konflux-ci.dev/v1alpha1 (nudgeflow's own) or
appstudio.redhat.com/v1beta2 (integration-service's, the kind build-service stands
down for). The default, auto, keeps the kind a namespace already has, and otherwise
writes nudgeflow's kind where the cluster serves it, else integration-service's.
Converting to the other kind keeps every edge, mode, gating group, label, annotation
and batching policy (an annotation on integration-service's kind; it holds at most
the served CRD's spec.nudges maxItems, 360 in the version Konflux ships, and a larger
NudgeConfig is refused, not cut; reading that CRD needs get on
customresourcedefinitions/nudgeconfigs.appstudio.redhat.com, else 360 applies). The old object stays until
you delete it; while both exist, integration-service's is the one read.

--dry-run prints the plan and writes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd, kf, outputDir, gitopsDir, to, dryRun)
		},
	}
	kf = addKubeFlags(cmd, true)
	cmd.Flags().StringVar(&outputDir, "output-dir", "", "write manifests for GitOps into this folder instead of applying")
	cmd.Flags().StringVar(&gitopsDir, "gitops-dir", "", "with --output-dir: the GitOps checkout whose Component manifests to patch")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change, write nothing")
	cmd.Flags().StringVar(&to, "to", "auto", "the NudgeConfig kind to write: auto, konflux-ci.dev/v1alpha1 or appstudio.redhat.com/v1beta2")
	return cmd
}

func runMigrate(cmd *cobra.Command, kf *kubeFlags, outputDir, gitopsDir, to string, dryRun bool) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	if gitopsDir != "" && outputDir == "" {
		return fmt.Errorf("--gitops-dir needs --output-dir: patched Component manifests are written there")
	}
	c, ns, err := kf.resolve()
	if err != nil {
		return err
	}
	plans, err := migrate.Load(ctx, c, ns)
	if err != nil {
		return err
	}
	fallback := nudgeconfigs.Own.GroupVersion().String()
	if to == "auto" {
		if _, own, err := nudgeconfigs.Served(c.RESTMapper()); err != nil {
			return err
		} else if !own {
			fallback = nudgeconfigs.Shipped.GroupVersion().String()
		}
	}
	var failed []string
	for _, p := range plans {
		target := to
		if to == "auto" {
			target = p.Source
			if !p.Exists {
				target = fallback
			}
		}
		if err := p.To(target); err != nil {
			return err
		}
		p.Report(out)
		if !p.Applicable() {
			failed = append(failed, p.Namespace)
			continue
		}
		switch {
		case outputDir != "":
			if err := writeGitOps(cmd, p, outputDir, gitopsDir, dryRun); err != nil {
				return err
			}
		case !p.Changes():
			fmt.Fprintf(out, "  unchanged: every build-nudges-ref edge is already in the NudgeConfig (%s)\n", p.Target)
		case dryRun:
			// What Apply would refuse (more edges than the served CRD holds) is refused here too.
			if _, err := migrate.Manifest(p, true); err != nil {
				return err
			}
			fmt.Fprintf(out, "  dry run: would apply NudgeConfig %s/nudge-config (%s) with %d nudge(s)\n", p.Namespace, p.Target, len(p.Nudges))
		default:
			if _, err := migrate.Apply(ctx, c, p); err != nil {
				return err
			}
			fmt.Fprintf(out, "  applied NudgeConfig %s/nudge-config (%s) with %d nudge(s) (server-side apply, field manager %s)\n",
				p.Namespace, p.Target, len(p.Nudges), migrate.FieldManager)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d namespace(s) not migrated because their nudge graph is invalid or holds an edge the target kind cannot (marked x above): %v", len(failed), failed)
	}
	return nil
}

func writeGitOps(cmd *cobra.Command, p *migrate.Plan, outputDir, gitopsDir string, dryRun bool) error {
	out := cmd.OutOrStdout()
	var changes []migrate.FileChange
	if gitopsDir != "" {
		var err error
		if changes, err = migrate.GitOpsChanges(gitopsDir, p.Namespace, p.Components); err != nil {
			return err
		}
	}
	if dryRun {
		fmt.Fprintf(out, "  dry run: would write %s/%s/nudgeconfig.yaml with %d nudge(s)\n", outputDir, p.Namespace, len(p.Nudges))
		for _, c := range changes {
			fmt.Fprintf(out, "  dry run: would write %s/%s/%s (%s without build-nudges-ref)\n", outputDir, p.Namespace, c.Output, c.Source)
		}
		return nil
	}
	written, err := migrate.WriteOutput(outputDir, p, changes)
	if err != nil {
		return err
	}
	for _, f := range written {
		fmt.Fprintf(out, "  wrote %s\n", f)
	}
	return nil
}
