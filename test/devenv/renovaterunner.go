package devenv

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
)

// startRenovateRunner runs the nudge PipelineRuns as Tekton would, with the pinned
// Renovate from the tool cache (installed from npm on first use), until stops
// run. It returns the folder of the runs' logs: <namespace>/<run>.log.
func startRenovateRunner(ctx context.Context, cfg *rest.Config, home string, out io.Writer, stops *[]func()) (string, error) {
	bin, err := localenv.Renovate()
	if err != nil {
		return "", fmt.Errorf("the pinned Renovate for the nudge PipelineRuns: %w", err)
	}
	c, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return "", fmt.Errorf("a Kubernetes client for the Renovate runner: %w", err)
	}
	state := filepath.Join(home, dirLogs, "renovate")
	r := &plrunner.Runner{Client: c, StateDir: state, ToolPath: filepath.Dir(bin)}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() {
		err := r.Run(runCtx)
		if err != nil {
			fmt.Fprintf(out, "the Renovate runner stopped: %v (nudge PipelineRuns stay pending until the next start)\n", err)
		}
		done <- err
	}()
	*stops = append(*stops, func() { cancel(); <-done })
	return filepath.Join(state, "runs"), nil
}
