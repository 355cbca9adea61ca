package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
	"github.com/nudgeflow/nudgeflow/test/devenv"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

func newDevCommand() *cobra.Command {
	ports := devenv.DefaultPorts
	var noPdeathsig, forgejo bool
	var tuning *nfworker.Tuning
	var writer *string
	var reconciles int
	cmd := &cobra.Command{
		Use:         "dev",
		Annotations: map[string]string{cli.OwnControllerLogs: "true"},
		Short:       "Start the whole system locally on embedded defaults (make run)",
		Long: `Starts a real kube-apiserver + etcd with every CRD and webhook, the Temporal dev
server with its Web UI, the GitHub emulator with its web pages, the bridge and the
worker, and seeds the "demo" namespace. State lives in $NUDGEFLOW_DEV_HOME, else
${XDG_CACHE_HOME:-~/.cache}/nudgeflow/dev: Ctrl-C stops everything and the next
start resumes where it was. Delete that folder to start afresh.

With --forgejo it also starts the real Gitea server (the API Forgejo shares) on
--forgejo-port with a third bundle, its state in the same folder; opt-in, as the
first build of the server takes minutes.

The subcommands stand in for Konflux services (build, snapshot, merge) and print
the environment to use the running system (env).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := devenv.Home()
			if err != nil {
				return err
			}
			if err := tuning.Validate(); err != nil {
				return err
			}
			immediateWriter, err := konfluxv1alpha1.ParseImmediateWriter(*writer)
			if err != nil {
				return fmt.Errorf("--immediate-writer: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devenv.Run(ctx, devenv.Options{Home: home, Ports: ports, Out: cmd.OutOrStdout(), NoParentDeathSignal: noPdeathsig,
				Worker: *tuning, ImmediateWriter: immediateWriter, MaxConcurrentReconciles: reconciles, Forgejo: forgejo})
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&ports.APIServer, "apiserver-port", ports.APIServer, "kube-apiserver's HTTPS port")
	fs.IntVar(&ports.Temporal, "temporal-port", ports.Temporal, "Temporal frontend port")
	fs.IntVar(&ports.TemporalUI, "ui-port", ports.TemporalUI, "Temporal Web UI port")
	fs.IntVar(&ports.Forge, "forge-port", ports.Forge, "GitHub emulator port (API and web pages)")
	fs.IntVar(&ports.ForgeHook, "forge-hook-port", ports.ForgeHook, "the bridge's forge webhook receiver port")
	fs.IntVar(&ports.GitLab, "gitlab-port", ports.GitLab, "GitLab emulator port (API and web pages)")
	fs.BoolVar(&forgejo, "forgejo", false, "also start the real Gitea server (Forgejo's API) with a third bundle; its first build takes minutes")
	fs.IntVar(&ports.Forgejo, "forgejo-port", ports.Forgejo, "Forgejo (Gitea) server port, with --forgejo")
	fs.IntVar(&ports.Registry, "registry-port", ports.Registry, "OCI image registry port (HTTPS): the simulated builds' images, which Renovate looks up")
	tuning = cli.AddWorkerTuningFlags(cmd)
	writer = cli.AddImmediateWriterFlag(cmd)
	fs.IntVar(&reconciles, "max-concurrent-reconciles", bridge.DefaultMaxConcurrentReconciles, "objects each bridge controller reconciles at once")
	fs.BoolVar(&noPdeathsig, "no-parent-death-signal", false, "let the servers outlive a killed `nudgeflow-dev dev` (tests of the crash recovery)")
	_ = fs.MarkHidden("no-parent-death-signal")
	cmd.AddCommand(newDevEnvCommand(), newDevBuildCommand(), newDevSnapshotCommand(), newDevMergeCommand(), newDevNudgeLatencyCommand())
	return cmd
}

// running reads the environment `nudgeflow-dev dev` wrote.
func running() (*devenv.Running, error) {
	home, err := devenv.Home()
	if err != nil {
		return nil, err
	}
	return devenv.ReadRunning(home)
}

// devKubeFlags are kubectl's flags, defaulting to the running environment's
// kubeconfig when neither --kubeconfig nor $KUBECONFIG says otherwise. The
// returned function resolves them into a client and the namespace.
func devKubeFlags(cmd *cobra.Command) func() (ctrlclient.Client, string, error) {
	return cli.AddKubeFlags(cmd, func() (string, error) {
		r, err := running()
		if err != nil {
			return "", err
		}
		return r.Kubeconfig, nil
	})
}

func newDevEnvCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: `Print the shell exports for the running environment: eval "$(nudgeflow-dev dev env)"`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := running()
			if err != nil {
				return err
			}
			var path []string
			if exe, err := os.Executable(); err == nil {
				path = append(path, filepath.Dir(exe))
			}
			assets, err := localenv.KubeAssets()
			if err != nil {
				return err
			}
			temporal, err := localenv.TemporalCLI()
			if err != nil {
				return err
			}
			kubectl, err := localenv.Kubectl()
			if err != nil {
				return err
			}
			path = append(path, filepath.Dir(kubectl), filepath.Dir(temporal), assets)
			out := cmd.OutOrStdout()
			vars := [][2]string{{"KUBECONFIG", r.Kubeconfig}, {"TEMPORAL_ADDRESS", r.TemporalAddress},
				{"TEMPORAL_NAMESPACE", r.Namespace}, {"TEMPORAL_UI", r.TemporalUI}, {"NUDGEFLOW_FORGE_URL", r.ForgeURL}}
			if r.ForgejoURL != "" { // with --forgejo
				vars = append(vars, [2]string{"NUDGEFLOW_FORGEJO_URL", r.ForgejoURL})
			}
			for _, kv := range vars {
				fmt.Fprintf(out, "export %s=%s\n", kv[0], shellQuote(kv[1]))
			}
			fmt.Fprintf(out, "export PATH=%s:\"$PATH\"\n", shellQuote(strings.Join(path, ":")))
			return nil
		},
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func newDevBuildCommand() *cobra.Command {
	var prBranch string
	cmd := &cobra.Command{
		Use:   "build COMPONENT [--pr BRANCH]",
		Short: "Simulate a component's push (or pull-request) build succeeding (build-service and Pipelines as Code)",
		Long: `Creates a succeeded push build PipelineRun of COMPONENT with IMAGE_URL and
IMAGE_DIGEST results (a new digest per build) of its branch's head in the GitHub
emulator, and the nudge PipelineRun build-service would create for it (none in a
namespace with a NudgeConfig).

With --pr BRANCH: a pull-request build instead, of the open pull request from
BRANCH in the component's repository (opened on the emulator, as the demo's
maintainer, when there is none): Pipelines as Code's pull_request annotations,
which start or update the PR group of BRANCH (ADR 29).`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&prBranch, "pr", "", "simulate a pull-request build of the PR from this branch (opened if needed)")
	flags := devKubeFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, ns, err := flags()
		if err != nil {
			return err
		}
		ctx := contextOf(cmd)
		out := cmd.OutOrStdout()
		if prBranch != "" {
			home, err := devenv.Home()
			if err != nil {
				return err
			}
			res, err := devenv.PRBuildAsMaintainer(ctx, home, c, ns, args[0], prBranch)
			if err != nil {
				return err
			}
			if res.Opened {
				fmt.Fprintf(out, "opened %s (from %s)\n", res.PRURL, prBranch)
			}
			fmt.Fprintf(out, "pipelinerun/%s succeeded: pull-request build of %s at %.7s: %s (%s)\n", res.Build, res.PRURL, res.SHA, res.ImageURL, res.Digest)
			return nil
		}
		home, err := devenv.Home()
		if err != nil {
			return err
		}
		reg, err := devenv.RegistryClient(home)
		if err != nil {
			return err
		}
		sha := devenv.PushHead(ctx, home, c, ns, args[0])
		res, err := devenv.BuildAt(ctx, c, reg, ns, args[0], sha)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "pipelinerun/%s succeeded: %s (%s)\n", res.Build, res.ImageURL, res.Digest)
		if res.Nudge != "" {
			fmt.Fprintf(out, "pipelinerun/%s created (build-service's nudge)\n", res.Nudge)
		}
		return nil
	}
	return cmd
}

func newDevSnapshotCommand() *cobra.Command {
	var pass, fail bool
	cmd := &cobra.Command{
		Use:   "snapshot GROUP --pass|--fail",
		Short: "Simulate integration-service: a Snapshot of a ComponentGroup whose tests passed or failed",
		Args:  cobra.ExactArgs(1),
	}
	flags := devKubeFlags(cmd)
	cmd.Flags().BoolVar(&pass, "pass", false, "the tests passed")
	cmd.Flags().BoolVar(&fail, "fail", false, "the tests failed")
	cmd.MarkFlagsOneRequired("pass", "fail")
	cmd.MarkFlagsMutuallyExclusive("pass", "fail")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, ns, err := flags()
		if err != nil {
			return err
		}
		name, err := devenv.Snapshot(cmd.Context(), c, ns, args[0], pass)
		if err != nil {
			return err
		}
		verdict := "passed"
		if fail {
			verdict = "failed"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "snapshot/%s: tests %s\n", name, verdict)
		return nil
	}
	return cmd
}

func newDevMergeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "merge PR",
		Short: "Merge a pull (merge) request as the demo's person, on the GitHub or GitLab emulator or Forgejo (PR: OWNER/REPO#N or its URL)",
		Long: `Merges PR on the forge of its repository, told from the Component whose
repository it is as the worker tells it (the git-provider annotation, else the
host): the GitHub emulator, the GitLab emulator, or with --forgejo the real
Gitea server, through that forge's API as the demo's person.`,
		Args: cobra.ExactArgs(1),
	}
	flags := devKubeFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ref, err := devenv.ParsePR(args[0])
		if err != nil {
			return err
		}
		c, ns, err := flags()
		if err != nil {
			return err
		}
		home, err := devenv.Home()
		if err != nil {
			return err
		}
		sha, err := devenv.MergeAsMaintainer(contextOf(cmd), home, c, ns, ref)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "merged %s: %s\n", ref, sha)
		return nil
	}
	return cmd
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
