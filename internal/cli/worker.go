package cli

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	"github.com/nudgeflow/nudgeflow/activities/pullrequest"
	nfkube "github.com/nudgeflow/nudgeflow/internal/kube"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

func newWorkerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker: ChangeGroup and nudge workflows and their activities",
	}
	kf := addKubeFlags(cmd, false)
	tf := addTemporalFlags(cmd)
	var botName, botEmail, operatorNamespace string
	cmd.Flags().StringVar(&botName, "bot-name", "", "commit author name of nudgeflow's pushes (default: derived from the forge credentials)")
	cmd.Flags().StringVar(&botEmail, "bot-email", "", "commit author email of nudgeflow's pushes; commits by anyone else are human edits")
	// The pod's own namespace (the downward API's POD_NAMESPACE) is where OpenShift
	// injects the trusted CA bundle into a labelled ConfigMap.
	cmd.Flags().StringVar(&operatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"),
		"nudgeflow's namespace: a ConfigMap there labelled config.openshift.io/inject-trusted-cabundle=true gives Renovate runs the trusted CA bundle (default $POD_NAMESPACE; empty: none)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		kube, err := kf.client()
		if err != nil {
			return err
		}
		cfg, err := kf.clientConfig().ClientConfig()
		if err != nil {
			return fmt.Errorf("loading kubeconfig: %w", err)
		}
		// ReleasePlanAdmissions are read cluster-wide on every sync and launch: cached.
		if kube, err = nfkube.WithReleaseCache(cmd.Context(), cfg, kube); err != nil {
			return err
		}
		c, err := tf.dial(slog.LevelInfo)
		if err != nil {
			return err
		}
		defer c.Close()
		w := nfworker.New(c, nfworker.Deps{
			Kube: kube, Temporal: c,
			PullRequest:       pullrequest.Config{Bot: forge.Signature{Name: botName, Email: botEmail}},
			OperatorNamespace: operatorNamespace,
		}, nfworker.Options{TaskQueue: tf.taskQueue})
		slog.Info("worker starting", "temporalAddress", tf.address, "temporalNamespace", tf.namespace, "taskQueue", tf.taskQueue,
			"operatorNamespace", operatorNamespace)
		if err := w.Run(sdkworker.InterruptCh()); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		return nil
	}
	return cmd
}
