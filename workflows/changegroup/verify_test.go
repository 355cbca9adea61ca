package changegroup

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// everPushed reports whether any sync carried digest.
func (f *fakeWorld) everPushed(digest string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, req := range f.syncs {
		if slices.ContainsFunc(req.Rows, func(r changegroupprapi.Row) bool { return r.New == digest }) {
			return true
		}
	}
	return false
}

// A build enters the group only once the cluster vouches for it: a verified build
// is delivered, a refused one is written nowhere (no push, no hand-back), its
// verdict is in the state and the status, and a redelivery is not verified again.
func TestBuildsAreVerifiedWhenTheyEnter(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.verifier.Refuse("sha256:forged", "sha256:forged-z")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Minute, "b", "sha256:forged", 5*time.Hour)   // newer than b1: it would win
	h.build(3*time.Minute, "b", "sha256:forged", 5*time.Hour)   // redelivered
	h.build(4*time.Minute, "z", "sha256:forged-z", 5*time.Hour) // not a member: would be handed back
	h.at(5*time.Minute, func() {
		h.env.SignalWorkflow(changegroupapi.SignalComponentBuilt, changegroupapi.ComponentBuilt{Component: "b", Namespace: "elsewhere", Build: imagebuild.Build{Digest: "sha256:b-other-ns", PullSpec: "quay.io/org/b@sha256:b-other-ns", BuiltAt: time.Unix(0, 0).Add(6 * time.Hour)}})
	})
	h.build(6*time.Minute, "b", "sha256:b1", 2*time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})

	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, digestsOf(f.lastSync()))
	require.False(t, f.everPushed("sha256:forged"), "the refused digest never reached the PR")
	require.Empty(t, f.handedBack, "a refused build is not handed back either")
	require.Equal(t, 1, f.verifier.Count("sha256:forged"), "a redelivered refused build is not verified again")
	require.Equal(t, 1, f.verifier.Count("sha256:a1"))

	require.Equal(t, buildcheck.Verdict{Reason: "no build of b produced sha256:forged"}, s.Verdicts["b@sha256:forged"])
	require.True(t, s.Verdicts["a@sha256:a1"].Verified)
	require.Equal(t, buildcheck.SourceBuildRun, s.Verdicts["b@sha256:b1"].Source)
	require.Contains(t, f.lastStatus().Conditions[0].Message, "3 build(s) refused, the cluster did not build them (see the BuildNotVerified Events)")

	asked := f.verifier.Asked()
	req := asked[slices.IndexFunc(asked, func(r buildcheck.Request) bool { return r.Digest == "sha256:b-other-ns" })]
	require.Equal(t, "tenant", req.Namespace, "verified in the group's namespace")
	require.Equal(t, "elsewhere", req.ClaimedNamespace, "against the namespace the signal names")
	require.Equal(t, buildcheck.Subject{Kind: buildcheck.KindChangeGroup, Name: "bundle-x-update", UID: "uid-1"}, req.Subject,
		"a refusal's Event goes on the group")
	require.Equal(t, "quay.io/org/b@sha256:b-other-ns", req.PullSpec)
}

// A verified build stays delivered after its PipelineRun is pruned: the verdict is
// state, carried through continue-as-new, and never asked again.
func TestVerifiedBuildOutlivesItsRunAcrossContinueAsNew(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.at(10*time.Minute, func() { h.env.SetContinueAsNewSuggested(true) })
	in := Input{Namespace: "tenant", Name: "g", UID: "u", Settings: Settings{Debounce: time.Second, PollInterval: time.Hour}}
	h.env.ExecuteWorkflow(changegroupapi.WorkflowName, in)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "continued as new, got %v", h.env.GetWorkflowError())
	var next Input
	require.NoError(t, converterFor().FromPayloads(can.Input, &next))
	require.True(t, next.State.Verdicts["a@sha256:a1"].Verified, "the verdict is carried")

	// The build run is pruned: nothing in the cluster names a1 any more.
	f.verifier.Refuse("sha256:a1")
	h = newHarness(t, f)
	h.env.SetContinuedExecutionRunID("run-1")
	h.build(time.Minute, "a", "sha256:a1", time.Hour) // redelivered by a resync
	h.build(2*time.Minute, "b", "sha256:b1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(next)

	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, digestsOf(f.lastSync()), "a1 is still delivered")
	require.Equal(t, 1, f.verifier.Count("sha256:a1"), "verified once, when it entered")
	require.Empty(t, f.handedBack)
}

// A run started (not continued) with a state keeps none of it: nudgeflow never
// starts a group so, whoever did chose it. Its builds are verified like signals and
// the rest is read from the cluster again.
func TestStateGivenAtStartIsNotTrusted(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.verifier.Refuse("sha256:forged")
	h := newHarness(t, f)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	forged := &State{Phase: appstudiov1alpha1.PhaseWaiting, Repo: changegroupprapi.Repo{Provider: "github", URL: "https://github.com/victim/repo"},
		Seen:     map[string]bool{"a@sha256:forged": true, "b@sha256:b1": true},
		Verdicts: map[string]buildcheck.Verdict{"a@sha256:forged": {Verified: true, Source: buildcheck.SourceBuildRun}},
		Components: []Component{
			{Name: "a", New: "sha256:forged", State: appstudiov1alpha1.ComponentReady, Build: imagebuild.Build{PullSpec: "quay.io/org/a@sha256:forged", BuiltAt: time.Unix(0, 0).Add(time.Hour)}},
			{Name: "b", New: "sha256:b1", State: appstudiov1alpha1.ComponentReady, Build: imagebuild.Build{PullSpec: "quay.io/org/b@sha256:b1", BuiltAt: time.Unix(0, 0).Add(time.Hour)}},
		}}
	s := h.run(Input{Namespace: "tenant", Name: "g", UID: "u", Settings: Settings{Debounce: time.Second, PollInterval: time.Hour}, State: forged})

	require.Equal(t, "https://github.com/org/bundle", s.Repo.URL, "the repository is the cluster's, not the state's")
	require.False(t, f.everPushed("sha256:forged"))
	require.Equal(t, map[string]string{"b": "sha256:b1"}, digestsOf(f.lastSync()), "b's build was verified and kept")
	require.Equal(t, 1, f.verifier.Count("sha256:forged"), "the verdict the state carried was not believed")
	require.False(t, s.Verdicts["a@sha256:forged"].Verified)
}

// A verification the cluster cannot answer keeps the build queued (visible in the
// state) until it can: never kept unverified, never lost.
func TestVerificationOutageKeepsTheBuildQueued(t *testing.T) {
	f := newFakeWorld("a")
	f.verifier.Fail(2)
	h := newHarness(t, f)
	queued := false
	h.at(2*time.Minute, func() {
		v, err := h.env.QueryWorkflow(changegroupapi.QueryState)
		require.NoError(t, err)
		var st State
		require.NoError(t, v.Get(&st))
		queued = len(st.Unverified) == 1 && st.component("a").New == ""
	})
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.prEvent(3*time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{Namespace: "tenant", Name: "g", UID: "u", Settings: Settings{Debounce: time.Second, PollInterval: 10 * time.Minute}})
	require.True(t, queued, "while the cluster could not be read the build waited, not collected")
	require.Zero(t, f.verifier.Left())
	require.Equal(t, 3, f.verifier.Count("sha256:a1"), "asked again after each failure, until answered")
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string]string{"a": "sha256:a1"}, digestsOf(f.lastSync()))
	require.Empty(t, s.Unverified)
}

// Runs of the shape before versionVerifyBuilds keep every build they receive, as
// they did when they were recorded.
func TestNoVerificationInTheShapeBefore(t *testing.T) {
	f := newFakeWorld("a")
	f.verifier.Refuse("sha256:a1")
	h := newHarness(t, f)
	h.env.OnGetVersion(versionVerifyBuilds, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})
	require.Equal(t, map[string]string{"a": "sha256:a1"}, digestsOf(f.lastSync()))
	require.Empty(t, f.verifier.Asked())
	require.Nil(t, s.Verdicts)
}
