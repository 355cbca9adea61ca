package changegroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// A group whose nudged component names a repository its namespace does not own is
// refused at Resolve (the activity also records the Warning Event on the group): it
// ends Failed with the refusal, which says what to create, in its status; it
// never touches the forge; and the builds it held are handed back to the nudged
// component, whose Nudge reports them (refused again, with an Event there).
func TestGroupOfARepositoryTheNamespaceDoesNotOwnFailsAndHandsBack(t *testing.T) {
	f := newFakeWorld("a")
	const refusal = "namespace tenant does not own repository https://github.com/other/bundle, so nudgeflow neither writes to it nor mints a token for it: " +
		"no Pipelines as Code Repository in namespace tenant names it. Create a Repository (apiVersion pipelinesascode.tekton.dev/v1alpha1, kind Repository) " +
		"in namespace tenant with spec.url: https://github.com/other/bundle"
	f.resolveErr = temporal.NewNonRetryableApplicationError(refusal, ownership.ErrorType, nil)
	h := newHarness(t, f)
	h.build(0, "a", "sha256:a1", time.Hour)
	s := h.run(Input{NudgedComponent: "bundle-x"})
	require.Equal(t, appstudiov1alpha1.PhaseFailed, s.Phase)
	require.Equal(t, "ResolveFailed", s.Reason)
	require.Contains(t, s.Message, "Create a Repository (apiVersion pipelinesascode.tekton.dev/v1alpha1, kind Repository) in namespace tenant")
	require.Empty(t, f.syncs, "no forge call")
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}}, f.handedBackDigests(), "the build is reported through normal nudging")
	require.Equal(t, []string{"bundle-x"}, f.targets)
	last := f.lastStatus()
	require.Equal(t, appstudiov1alpha1.PhaseFailed, last.Phase)
	require.NotEmpty(t, last.Conditions)
	require.Contains(t, last.Conditions[0].Message, "does not own repository", "the group's status says why")
}
