package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	nfkube "github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

func newWorkerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker: ChangeGroup and nudge workflows and their activities",
	}
	kf := addKubeFlags(cmd, false)
	kf.addRateFlags(cmd)
	tf := addTemporalFlags(cmd)
	tuning := addWorkerTuningFlags(cmd)
	var botName, botEmail, operatorNamespace string
	cmd.Flags().StringVar(&botName, "bot-name", "", "commit author name of nudgeflow's pushes (default: derived from the forge credentials)")
	cmd.Flags().StringVar(&botEmail, "bot-email", "", "commit author email of nudgeflow's pushes; commits by anyone else are human edits")
	// The pod's own namespace (the downward API's POD_NAMESPACE) is where OpenShift
	// injects the trusted CA bundle into a labelled ConfigMap.
	cmd.Flags().StringVar(&operatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"),
		"nudgeflow's namespace: a ConfigMap there labelled config.openshift.io/inject-trusted-cabundle=true gives Renovate runs the trusted CA bundle, and the cluster admin's ConfigMap "+
			ownership.BindingConfigMap+" there binds repositories to tenant namespaces (default $POD_NAMESPACE; empty: neither)")
	ops := addWorkerOpsFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := tuning.Validate(); err != nil {
			return err
		}
		kube, err := kf.client()
		if err != nil {
			return err
		}
		cfg, err := kf.clientConfig().ClientConfig()
		if err != nil {
			return fmt.Errorf("loading kubeconfig: %w", err)
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		// The probes answer from the start: alive while the ReleasePlanAdmission
		// cache lists (a large cluster's first list must not fail liveness and
		// restart the pod), not ready until it has synced and the worker polls.
		var started atomic.Pointer[nfworker.Runner]
		ready := func(ctx context.Context) error {
			r := started.Load()
			if r == nil {
				return errors.New("the ReleasePlanAdmission cache has not synced yet")
			}
			return r.Ready(ctx)
		}
		stopOps, err := ops.serve(ctx, ready, cfg)
		if err != nil {
			return err
		}
		defer stopOps()
		// ReleasePlanAdmissions are read cluster-wide on every sync and launch: cached.
		if kube, err = nfkube.WithReleaseCache(ctx, cfg, kube); err != nil {
			return err
		}
		tf.metrics = metrics.TemporalHandler()
		c, err := tf.lazy()
		if err != nil {
			return err
		}
		defer c.Close()
		runner := &nfworker.Runner{Client: c, New: func() sdkworker.Worker {
			return nfworker.New(c, nfworker.Deps{
				Kube: kube, Temporal: c,
				PullRequest:       changegrouppr.Config{Bot: forge.Signature{Name: botName, Email: botEmail}, Transport: forgeTransport()},
				OperatorNamespace: operatorNamespace,
			}, nfworker.Options{TaskQueue: tf.taskQueue, Tuning: *tuning})
		}}
		started.Store(runner)
		slog.Info("worker starting", append([]any{"temporalAddress", tf.address, "temporalNamespace", tf.namespace, "taskQueue", tf.taskQueue,
			"operatorNamespace", operatorNamespace,
			"stickyCacheSize", tuning.StickyCacheSize, "maxConcurrentActivities", tuning.MaxConcurrentActivities,
			"maxConcurrentWorkflowTasks", tuning.MaxConcurrentWorkflowTasks,
			"workflowTaskPollers", tuning.WorkflowTaskPollers, "activityTaskPollers", tuning.ActivityTaskPollers,
			"stopTimeout", tuning.StopTimeout}, tf.security.describe()...)...)
		if err := runner.Run(ctx); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		return nil
	}
	return cmd
}

// addWorkerTuningFlags registers the worker's sizing flags (nudgeflow worker and
// nudgeflow-dev dev); the defaults and why are in worker.Tuning.
func addWorkerTuningFlags(cmd *cobra.Command) *nfworker.Tuning {
	t := nfworker.Tuning{}.WithDefaults()
	fs := cmd.Flags()
	fs.IntVar(&t.StickyCacheSize, "sticky-cache-size", t.StickyCacheSize, "workflow executions kept in memory between their tasks (process-wide); the others replay their history on their next task")
	fs.IntVar(&t.MaxConcurrentActivities, "max-concurrent-activities", t.MaxConcurrentActivities, "activities run at once (Kubernetes API and forge calls)")
	fs.IntVar(&t.MaxConcurrentWorkflowTasks, "max-concurrent-workflow-tasks", t.MaxConcurrentWorkflowTasks, "workflow tasks run at once (at least 2)")
	fs.IntVar(&t.WorkflowTaskPollers, "workflow-task-pollers", t.WorkflowTaskPollers, "long polls kept open for workflow tasks (at least 2)")
	fs.IntVar(&t.ActivityTaskPollers, "activity-task-pollers", t.ActivityTaskPollers, "long polls kept open for activity tasks")
	fs.DurationVar(&t.StopTimeout, "worker-stop-timeout", nfworker.DefaultStopTimeout,
		"on SIGTERM, how long running activities may finish before they are cancelled; keep it below the pod's terminationGracePeriodSeconds (90s in deploy/)")
	return &t
}
