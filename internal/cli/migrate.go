package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nudgeflow/nudgeflow/internal/migrate"
)

func newMigrateCommand() *cobra.Command {
	var outputDir, gitopsDir string
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
on the cluster are not changed: build-service stops nudging once a NudgeConfig exists.

With --output-dir DIR nothing is written to the cluster; DIR/<namespace>/ receives
nudgeconfig.yaml and, for each file under --gitops-dir holding a Component of that
namespace with build-nudges-ref, a patched copy without the field (component-*.yaml),
plus MIGRATION.txt naming the file each copy replaces. The folder applies as is:
  kubectl apply -n <namespace> -f DIR/<namespace>

--dry-run prints the plan and writes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd, kf, outputDir, gitopsDir, dryRun)
		},
	}
	kf = addKubeFlags(cmd, true)
	cmd.Flags().StringVar(&outputDir, "output-dir", "", "write manifests for GitOps into this folder instead of applying")
	cmd.Flags().StringVar(&gitopsDir, "gitops-dir", "", "with --output-dir: the GitOps checkout whose Component manifests to patch")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change, write nothing")
	return cmd
}

func runMigrate(cmd *cobra.Command, kf *kubeFlags, outputDir, gitopsDir string, dryRun bool) error {
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
	var failed []string
	for _, p := range plans {
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
			fmt.Fprintf(out, "  unchanged: every build-nudges-ref edge is already in the NudgeConfig\n")
		case dryRun:
			fmt.Fprintf(out, "  dry run: would apply NudgeConfig %s/nudge-config with %d nudge(s)\n", p.Namespace, len(p.Nudges))
		default:
			if _, err := migrate.Apply(ctx, c, p); err != nil {
				return err
			}
			fmt.Fprintf(out, "  applied NudgeConfig %s/nudge-config with %d nudge(s) (server-side apply, field manager %s)\n",
				p.Namespace, len(p.Nudges), migrate.FieldManager)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d namespace(s) not migrated because their nudge graph is invalid: %v", len(failed), failed)
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
