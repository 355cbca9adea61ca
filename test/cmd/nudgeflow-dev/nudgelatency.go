package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgeflow/nudgeflow/test/devenv"
)

func newDevNudgeLatencyCommand() *cobra.Command {
	opts := devenv.LatencyOptions{N: 10, Idle: 10 * time.Second, Timeout: 5 * time.Minute}
	var writers string
	cmd := &cobra.Command{
		Use:   "nudge-latency",
		Short: "Measure immediate nudges on the running `nudgeflow-dev dev --forgejo`: Renovate's and the direct writer's, side by side",
		Long: `Seeds the namespace ` + devenv.LatencyNamespace + ` in the running stack (which must have been
started with --forgejo): per writer, a nudging component and the bundle it nudges on
the Gitea server, the edge pinned to that writer (immediateWriter), the bundle's
repository made anew. Then, per writer in turn, N simulated push builds one after the
other, each waiting for the previous nudge's workflow to end, and prints:

  nudge-latency idle seconds=S cpu_s_per_s=C      the idle stack's CPU, before the first nudge
  nudge-latency writer=W n=N p50_s=… p99_s=… cpu_s_per_nudge=… wall_s=… busy_cores=… polls=… cpu_s=…
  nudge-latency ratio of=direct/renovate p50=… p99=… cpu=…

A latency runs from the build reported succeeded (its status written) to the
Gitea API showing an open pull request whose head holds the build's digest in the
nudged file. CPU is every process of the stack — the ` + "`nudgeflow-dev dev`" + ` process
(worker, bridge, emulators, registry, Renovate runner), the Renovate runs it reaped,
kube-apiserver, etcd, Temporal, the Gitea server and the git processes it reaped — from
before the first build to after the last nudge's end, divided by N. busy_cores is
the whole machine's (other jobs too); polls the measure's own reads of the forge,
whose cost on the Gitea server is in the CPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := devenv.Home()
			if err != nil {
				return err
			}
			if writers != "" {
				opts.Writers = strings.Split(writers, ",")
			}
			opts.Out, opts.Log = cmd.OutOrStdout(), cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err = devenv.MeasureNudgeLatency(ctx, home, opts)
			return err
		},
	}
	fs := cmd.Flags()
	fs.IntVarP(&opts.N, "n", "n", opts.N, "nudges per writer")
	fs.StringVar(&writers, "writers", "renovate,direct", "the writers to measure, in order")
	fs.DurationVar(&opts.Idle, "idle", opts.Idle, "how long to read the idle stack's CPU first (0: not)")
	fs.DurationVar(&opts.Poll, "poll", 0, "also read the pull requests at this interval, not only at the forge's webhook deliveries (a finer clock; the reads' CPU on the Gitea server counts in the figures)")
	fs.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "deadline of each nudge")
	return cmd
}
