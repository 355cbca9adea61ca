// Package coexist_test proves nudgeflow's division of labour with the Konflux
// services that nudge (bridge/builds.Peers): on one real kube-apiserver and
// Temporal, a world per combination, each with its own bridge and stand-ins that
// follow the services' published contract (test/konfluxpeers), and the real
// worker (coexist_test.go lists the worlds: alone, beside build-service, beside
// integration-service as Konflux ships, the GitHub App only, an
// integration-service that never decides, a validated edge build-nudges-ref names
// too, merge-queue builds; other files add new-model keys and the cancelled
// run's leak).
//
// Every world must nudge every build exactly once per edge.
package coexist_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

const (
	taskQueue         = "coexist"
	operatorNamespace = "nudgeflow-system"
)

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Start:            startWorker,
	}))
}

// startWorker runs the real worker for the package; each world starts its bridge.
func startWorker(w *world.World) (func(), error) {
	if err := w.Kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return nil, fmt.Errorf("creating the operator namespace: %w", err)
	}
	var wk sdkworker.Worker = nfworker.New(w.TemporalClient, nfworker.Deps{Kube: w.Kube, Temporal: w.TemporalClient, OperatorNamespace: operatorNamespace,
		StandInForge: world.IsStandInForge},
		nfworker.Options{TaskQueue: taskQueue, FailWorkflowOnPanic: true,
			// This world awaits Renovate PipelineRuns: the Renovate writer, pinned.
			ImmediateWriter: konfluxv1alpha1.WriterRenovate})
	if err := wk.Start(); err != nil {
		return nil, fmt.Errorf("starting the worker: %w", err)
	}
	return wk.Stop, nil
}
