package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/releases"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The worker reads ReleasePlanAdmissions through an informer cache: one created
// after the cache started is seen through it, and the distribution repositories come
// from it; other kinds are still read live.
func TestWorkerReadsReleasePlanAdmissionsThroughItsCache(t *testing.T) {
	w := world.Get(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tenant, managed := w.Namespace(t), w.Namespace(t)
	live, err := ctrlclient.New(w.Config(), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	c, err := kube.WithReleaseCache(ctx, w.Config(), live)
	require.NoError(t, err)
	require.NotSame(t, live, c, "the API server serves ReleasePlanAdmission: the reads are cached")

	require.NoError(t, w.Kube.Create(ctx, &mirrorv1alpha1.ReleasePlanAdmission{
		ObjectMeta: metav1.ObjectMeta{Name: "rpa", Namespace: managed},
		Spec: mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: tenant, Data: &runtime.RawExtension{Raw: []byte(
			`{"mapping":{"components":[{"name":"operand","repositories":[{"url":"quay.io/redhat-prod/org----operand"}]}]}}`)}},
	}))
	world.Eventually(t, 30*time.Second, "the cache sees the new admission", func() (bool, error) {
		got, _, err := releases.Repositories(ctx, c, tenant, "operand")
		if err != nil {
			return false, err
		}
		want := []string{"quay.io/redhat-prod/org----operand", "registry.redhat.io/org/operand"}
		if fmt.Sprint(got["operand"]) != fmt.Sprint(want) {
			return false, fmt.Errorf("got %v", got)
		}
		return true, nil
	})
	// A kind that is not cached is read live: a Component created a moment ago is there.
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: tenant}}
	require.NoError(t, w.Kube.Create(ctx, comp))
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKeyFromObject(comp), &mirrorv1alpha1.Component{}))
}
