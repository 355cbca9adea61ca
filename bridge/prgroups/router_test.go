package prgroups

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// A PR event reaches the PR groups of the components whose repository it is about,
// host included, and, when a tenant's bound secret verified it, of that tenant's
// namespace only: the same owner/name on another forge, or the same repository in
// another tenant's namespace, is not signalled.
func TestRouterComparesHostAndNamespace(t *testing.T) {
	component := func(ns, name, gitURL string, nudges ...string) *mirrorv1alpha1.Component {
		return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, BuildNudgesRef: nudges,
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: gitURL}}}}
	}
	kc := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		component("tenant-a", "lib", "https://github.com/org/lib.git", "app"),
		component("tenant-b", "lib", "https://github.com/org/lib", "app"),
		component("tenant-c", "lib", "https://gitlab.example.com/org/lib", "app"),
	).Build()
	tc := mocks.NewClient(t)
	var signalled []string
	tc.On("SignalWorkflow", mock.Anything, mock.Anything, "", prgroup.SignalOriginEvent, mock.Anything).
		Run(func(a mock.Arguments) { signalled = append(signalled, a.String(1)) }).Return(nil)
	r := &Router{Client: kc, Temporal: tc}
	e := forgehook.Event{Repo: "github.com/org/lib", RepoFullName: "org/lib", URL: "https://github.com/org/lib/pull/3", Number: 3,
		HeadRef: "feature", Action: "closed"}
	id := func(ns string) string { return prgroup.WorkflowID(ns, prgroup.GroupOf("feature"), "app") }

	require.NoError(t, r.PullRequestEvent(context.Background(), e))
	slices.Sort(signalled)
	require.Equal(t, []string{id("tenant-a"), id("tenant-b")}, signalled, "the shared secret's event: github.com/org/lib's components, not gitlab.example.com's")

	signalled = nil
	e.Namespace = "tenant-b"
	require.NoError(t, r.PullRequestEvent(context.Background(), e))
	require.Equal(t, []string{id("tenant-b")}, signalled, "tenant-b's bound secret reaches tenant-b only")

	signalled = nil
	e.Namespace = "tenant-c"
	require.NoError(t, r.PullRequestEvent(context.Background(), e))
	require.Empty(t, signalled, "tenant-c's lib is on another host")
}
