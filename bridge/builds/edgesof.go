package builds

import (
	"context"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// EdgesOfBuild lists the nudge edges a build with meta's labels is routed along,
// as the build reconciler reads them beside peers (its NewModelBuild marks
// included): for `nudgeflow debug build`, which must give the bridge's answer,
// not a second opinion.
func EdgesOfBuild(ctx context.Context, c ctrlclient.Reader, meta metav1.ObjectMeta, peers Peers) ([]Edge, error) {
	edges, err := edgesOf(ctx, c, meta.Namespace, konflux.ComponentOf(meta.Labels), peers.BuildService)
	if err != nil {
		return nil, err
	}
	markNewModel(&tektonv1.PipelineRun{ObjectMeta: meta}, edges)
	return edges, nil
}

// IsVerdict is integration-service's verdict on a build as the bridge reads it:
// whether it was written, its value, and the targets it names.
func IsVerdict(meta metav1.ObjectMeta) (decided bool, value string, nudged map[string]bool) {
	v := verdictOf(&tektonv1.PipelineRun{ObjectMeta: meta})
	return v.decided, v.value, v.nudged
}
