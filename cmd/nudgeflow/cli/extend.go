package cli

import (
	"os"

	"github.com/spf13/cobra"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// What a binary that extends NewRoot needs to add commands that behave like the
// product's: the dev binary of the test module (test/cmd/nudgeflow-dev) adds
// `dev` and `bench` this way, so the shipped binary carries neither.

// OwnControllerLogs is the annotation of a command that routes
// controller-runtime's logs itself (see logging.go).
const OwnControllerLogs = ownControllerLogs

// AddWorkerTuningFlags adds `nudgeflow worker`'s tuning flags to cmd.
func AddWorkerTuningFlags(cmd *cobra.Command) *nfworker.Tuning { return addWorkerTuningFlags(cmd) }

// AddImmediateWriterFlag adds `nudgeflow worker`'s --immediate-writer to cmd.
func AddImmediateWriterFlag(cmd *cobra.Command) *string { return addImmediateWriterFlag(cmd) }

// AddKubeFlags adds kubectl's flags to cmd. The returned function resolves them
// into a client and the namespace; when neither --kubeconfig nor $KUBECONFIG
// names a kubeconfig, it uses defaultKubeconfig's.
func AddKubeFlags(cmd *cobra.Command, defaultKubeconfig func() (string, error)) func() (ctrlclient.Client, string, error) {
	kf := addKubeFlags(cmd, false)
	return func() (ctrlclient.Client, string, error) {
		if kf.kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
			path, err := defaultKubeconfig()
			if err != nil {
				return nil, "", err
			}
			kf.kubeconfig = path
		}
		return kf.resolve()
	}
}
