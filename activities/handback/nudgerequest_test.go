package handback

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// The hand-back's Nudge carries the build as the group received it: a build the
// bridge filled whole is never read again, and only a build signalled before
// builds were carried whole is completed from its run.
func TestNudgeRequestReadsTheRunOnlyForALegacyBuild(t *testing.T) {
	run := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "op-on-push-1", Namespace: "ns", UID: "uid-1",
		Annotations: map[string]string{konflux.NudgeFilesKey.New: ".*Dockerfile", konflux.AnnotationPaCSHA: "abc",
			konflux.AnnotationPaCRepoURL: "https://forge/org/op"}}}
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	konflux.SucceededBuild{ImageURL: "quay.io/org/op:on-push-abc", Digest: "sha256:1111", Started: at, Completed: at}.WriteStatus(run)
	reads := 0
	k := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(run).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	a := &Activities{Kube: k}
	req := handbackapi.Request{Namespace: "ns", ChangeGroup: "g", Target: "bundle"}

	whole, ok := konflux.BuildOf(run)
	require.True(t, ok)
	nreq, err := a.nudgeRequest(context.Background(), req, handbackapi.Build{Component: "op", Build: whole})
	require.NoError(t, err)
	require.Equal(t, whole, nreq.Build, "the build as the group received it")
	require.Zero(t, reads, "a whole build is not read again")

	legacy := imagebuild.Build{Digest: "sha256:1111", PullSpec: "quay.io/org/op@sha256:1111", BuildPipelineRun: "op-on-push-1", BuiltAt: at}
	nreq, err = a.nudgeRequest(context.Background(), req, handbackapi.Build{Component: "op", Build: legacy})
	require.NoError(t, err)
	require.Equal(t, 1, reads, "a legacy build is completed from its run")
	require.Equal(t, whole, nreq.Build, "completed, it is the build the bridge would fill today")
}
