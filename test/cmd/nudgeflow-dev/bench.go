package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
	"github.com/nudgeflow/nudgeflow/test/bench"
)

func newBenchCommand() *cobra.Command {
	opts := bench.Defaults()
	var quick bool
	var phases string
	cmd := &cobra.Command{
		Use:         "bench",
		Annotations: map[string]string{cli.OwnControllerLogs: "true"},
		Short:       "Measure nudgeflow at a tenant's scale on this machine (the real servers, bridge and worker)",
		Long: `Starts what ` + "`make run`" + ` starts — a real kube-apiserver + etcd with every CRD and
webhook, the Temporal dev server, the GitHub emulator — with the bridge in this
process and ` + "`nudgeflow worker`" + ` as a separate process, loads them and prints one
line per measure:

  bench bridge builds=B ...                 succeeded builds -> Temporal signals per second
                                            (the bridge starting with B builds waiting)
  bench intercept groups=N ...              nudge PipelineRun interception latency with N
                                            active ChangeGroups in the namespace vs none
  bench changegroup-admission groups=N ...  ChangeGroup create admission, N groups vs none
  bench worker groups=G ...                 worker RSS with G open, idle ChangeGroups
  bridge-scale plrs=P ...                   ` + "`nudgeflow bridge`" + ` as its own process (GOMEMLIMIT 512MiB)
                                            with P PipelineRuns like a Konflux cluster's:
                                            RSS after a GC, interception p99, cache sync
                                            (only with --only; runs last; written at 30-60 per second on 2
                                            cores; the bench's kube-apiserver keeps no watch
                                            cache for PipelineRuns: lists, the bridge's sync
                                            included, come from etcd; the writing stops when
                                            the machine has less than 2 GiB available)
  nudge-latency writer=W n=N p50_s=… ...    immediate nudges, build succeeded -> PR on the Gitea
                                            server with the digest, and the stack's CPU per
                                            nudge, Renovate's and the direct writer's in one run
                                            (only with --only; its own stack: ` + "`nudgeflow-dev dev --forgejo`" + `
                                            as a child process; see ` + "`nudgeflow-dev dev nudge-latency --help`" + `)

p50/p99 are the webhook handler's own time (nudgeflow_admission_duration_seconds,
native histogram: each quantile is its bucket's upper bound, at most 5% high);
http_ the webhook server's (controller_runtime_webhook_latency_seconds); client_
the create as the API client saw it. ratio is p99 over the baseline's p99.
Everything runs in a temporary folder; its logs are kept when a measure fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick {
				q := bench.Quick()
				for name, v := range map[string]*int{"groups": &opts.Groups, "samples": &opts.Samples, "builds": &opts.Builds, "worker-groups": &opts.WorkerGroups, "plrs": &opts.PipelineRuns, "nudges": &opts.Nudges} {
					if !cmd.Flags().Changed(name) {
						*v = map[string]int{"groups": q.Groups, "samples": q.Samples, "builds": q.Builds, "worker-groups": q.WorkerGroups, "plrs": q.PipelineRuns, "nudges": q.Nudges}[name]
					}
				}
			}
			if phases != "" {
				opts.Phases = strings.Split(phases, ",")
			}
			opts.Out, opts.Log = cmd.OutOrStdout(), cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.Run(ctx, opts)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&opts.Groups, "groups", opts.Groups, "active ChangeGroups in the namespace of the admission measures")
	fs.IntVar(&opts.GroupsPerBundle, "groups-per-bundle", opts.GroupsPerBundle, "of those, groups per nudged component (3 members each)")
	fs.IntVar(&opts.Samples, "samples", opts.Samples, "admissions timed per series (ChangeGroup creates: at most 2 per bundle)")
	fs.IntVar(&opts.Builds, "builds", opts.Builds, "succeeded push builds for the bridge measure")
	fs.IntVar(&opts.Edges, "edges", opts.Edges, "validated nudge edges per build")
	fs.IntVar(&opts.WorkerGroups, "worker-groups", opts.WorkerGroups, "open ChangeGroups for the worker's memory")
	fs.IntVar(&opts.Nudges, "nudges", opts.Nudges, "nudges per writer for the nudge-latency measure")
	fs.IntVar(&opts.PipelineRuns, "plrs", opts.PipelineRuns, "PipelineRuns in the cluster for the bridge-scale measure")
	fs.StringArrayVar(&opts.BridgeBinaries, "bridge-binary", nil, "nudgeflow binary whose bridge the bridge-scale measure runs (default: this one); repeat to compare builds on the same PipelineRuns")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", 0, "the bridge's --max-concurrent-reconciles (default: the bridge's)")
	fs.StringArrayVar(&opts.BridgeArgs, "bridge-flag", nil, "extra flag of the bridge-scale measure's `nudgeflow bridge`, for example --bridge-flag=--pprof-bind-address=127.0.0.1:6060 (repeatable)")
	fs.StringArrayVar(&opts.WorkerArgs, "worker-flag", nil, "extra flag of `nudgeflow worker`, for example --worker-flag=--sticky-cache-size=10000 (repeatable)")
	fs.StringArrayVar(&opts.TemporalArgs, "temporal-flag", nil, "extra flag of `temporal server start-dev`, for example --temporal-flag=--dynamic-config-value=KEY=VALUE (repeatable)")
	fs.StringVar(&phases, "only", "", "comma-separated measures to run: "+strings.Join(bench.Phases, ",")+" (default: all but bridge-scale, which runs only when named)")
	fs.BoolVar(&quick, "quick", false, "small sizes (groups 20, samples 20, builds 40, worker-groups 40, plrs 2000, nudges 2) for a smoke run; explicit flags still win")
	fs.BoolVar(&opts.KeepLogs, "keep-logs", false, "keep the servers', bridge's and worker's logs")
	fs.StringVar(&opts.ProfileDir, "profile-dir", "", "write a CPU and an allocation profile of this process (the bench and the in-process bridge) per measure into this folder (cpu-<measure>.pprof, allocs-<measure>.pprof)")
	return cmd
}
