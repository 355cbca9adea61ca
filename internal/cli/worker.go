package cli

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	"github.com/nudgeflow/nudgeflow/activities/pullrequest"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

func newWorkerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker: ChangeGroup and nudge workflows and their activities",
	}
	kf := addKubeFlags(cmd, false)
	tf := addTemporalFlags(cmd)
	var botName, botEmail string
	cmd.Flags().StringVar(&botName, "bot-name", "", "commit author name of nudgeflow's pushes (default: derived from the forge credentials)")
	cmd.Flags().StringVar(&botEmail, "bot-email", "", "commit author email of nudgeflow's pushes; commits by anyone else are human edits")
	ops := addWorkerOpsFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		kube, err := kf.client()
		if err != nil {
			return err
		}
		tf.metrics = metrics.TemporalHandler()
		c, err := tf.dial(slog.LevelInfo)
		if err != nil {
			return err
		}
		defer c.Close()
		stopHealth, err := ops.serve(c)
		if err != nil {
			return err
		}
		defer stopHealth()
		w := nfworker.New(c, nfworker.Deps{
			Kube: kube, Temporal: c,
			PullRequest: pullrequest.Config{Bot: forge.Signature{Name: botName, Email: botEmail}, Transport: forgeTransport()},
		}, nfworker.Options{TaskQueue: tf.taskQueue})
		slog.Info("worker starting", append([]any{"temporalAddress", tf.address, "temporalNamespace", tf.namespace, "taskQueue", tf.taskQueue}, tf.security.describe()...)...)
		if err := w.Run(sdkworker.InterruptCh()); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		return nil
	}
	return cmd
}
