package prgroup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/buildcheck/buildchecktest"
	acts "github.com/nudgeflow/nudgeflow/activities/prgroup"
	"github.com/nudgeflow/nudgeflow/contracts/prgroupapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// fakeForge answers the activities from a script the test changes as time passes.
type fakeForge struct {
	origin    func(call int) prgroupapi.OriginObservation
	observed  int
	sync      func(call int, req prgroupapi.SyncRequest) prgroupapi.SyncResult
	syncs     []prgroupapi.SyncRequest
	pushFound bool
	closes    []prgroupapi.CloseRequest
	// cluster stands in for the build verification (set by setupWorkflow when nil).
	cluster *buildchecktest.Fake
}

func setupWorkflow(t *testing.T, f *fakeForge) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: WorkflowID("ns", "g", "bundle")})
	env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	if f.cluster == nil {
		f.cluster = buildchecktest.New()
	}
	f.cluster.Register(env)
	a := &acts.Activities{}
	env.RegisterActivityWithOptions(a.Sync, activity.RegisterOptions{Name: prgroupapi.SyncActivity})
	env.RegisterActivityWithOptions(a.ObserveOrigins, activity.RegisterOptions{Name: prgroupapi.ObserveOriginsActivity})
	env.RegisterActivityWithOptions(a.FindPushBuild, activity.RegisterOptions{Name: prgroupapi.FindPushBuildActivity})
	env.RegisterActivityWithOptions(a.Close, activity.RegisterOptions{Name: prgroupapi.CloseActivity})
	env.OnActivity(prgroupapi.ObserveOriginsActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, req prgroupapi.ObserveRequest) ([]prgroupapi.OriginObservation, error) {
		f.observed++
		ob := f.origin(f.observed)
		ob.RepoURL, ob.Number = req.Origins[0].RepoURL, req.Origins[0].Number
		return []prgroupapi.OriginObservation{ob}, nil
	}).Maybe()
	env.OnActivity(prgroupapi.SyncActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, req prgroupapi.SyncRequest) (prgroupapi.SyncResult, error) {
		f.syncs = append(f.syncs, req)
		return f.sync(len(f.syncs), req), nil
	}).Maybe()
	env.OnActivity(prgroupapi.FindPushBuildActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, req prgroupapi.FindPushBuildRequest) (prgroupapi.PushBuild, error) {
		if !f.pushFound {
			return prgroupapi.PushBuild{}, nil
		}
		return prgroupapi.PushBuild{Found: true, Build: imagebuild.Build{Image: "quay.io/org/a", Digest: "sha256:" + strings.Repeat("b", 64), BuildUID: "push-1", CommitSHA: req.CommitSHA}}, nil
	}).Maybe()
	env.OnActivity(prgroupapi.CloseActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, req prgroupapi.CloseRequest) (prgroupapi.SyncResult, error) {
		f.closes = append(f.closes, req)
		return prgroupapi.SyncResult{}, nil
	}).Maybe()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalPRBuild, PRBuild{Component: "a", SourceBranch: "g", Origin: OriginRef{RepoURL: "https://h/org/a", Number: 1}, Build: imagebuild.Build{Image: "quay.io/org/a", Digest: "sha256:" + strings.Repeat("a", 64), BuildUID: "pr-1", BuiltAt: time.Unix(10, 0)}})
	}, 0)
	return env
}

func openDraft(int, prgroupapi.SyncRequest) prgroupapi.SyncResult {
	return prgroupapi.SyncResult{PR: prgroupapi.PRRef{Number: 5, URL: "https://h/org/bundle/pull/5"}, State: prgroupapi.PROpen, Draft: true}
}

// A person closes the target PR while the originating PR is open; then it merges.
// The run ends Closed, "closed by a person", not Ended "nothing to propose".
func TestClosedByPersonThenOriginMerged(t *testing.T) {
	f := &fakeForge{pushFound: true}
	f.origin = func(call int) prgroupapi.OriginObservation {
		if call >= 3 {
			return prgroupapi.OriginObservation{Found: true, Merged: true, MergeCommitSHA: "m1"}
		}
		return prgroupapi.OriginObservation{Found: true, Open: true}
	}
	f.sync = func(call int, req prgroupapi.SyncRequest) prgroupapi.SyncResult {
		if call == 1 {
			return openDraft(call, req)
		}
		return prgroupapi.SyncResult{PR: prgroupapi.PRRef{Number: 5}, State: prgroupapi.PRClosed}
	}
	env := setupWorkflow(t, f)
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", Group: "g", Target: "bundle"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var st State
	require.NoError(t, env.GetWorkflowResult(&st))
	require.Equal(t, PhaseClosed, st.Phase)
	require.Equal(t, "the target PR was closed by a person", st.Reason)
	require.Len(t, f.syncs, 2, "nothing is written after the person closed the PR")
}

// An originating PR that cannot be read, with a different error each poll, leaves
// one note of that kind (the latest), not one per poll.
func TestNotesBounded(t *testing.T) {
	f := &fakeForge{sync: openDraft}
	f.origin = func(call int) prgroupapi.OriginObservation {
		if call == 1 {
			return prgroupapi.OriginObservation{Found: true, Open: true}
		}
		if call > 30 {
			return prgroupapi.OriginObservation{Found: true}
		}
		return prgroupapi.OriginObservation{Error: fmt.Sprintf("HTTP 502 (request id %d)", call)}
	}
	env := setupWorkflow(t, f)
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", Group: "g", Target: "bundle"})
	require.True(t, env.IsWorkflowCompleted())
	var st State
	require.NoError(t, env.GetWorkflowResult(&st))
	require.Equal(t, PhaseClosed, st.Phase, "the origin closed unmerged at the end")
	var unread []string
	for _, n := range st.Notes {
		if strings.Contains(n, "could not be read") {
			unread = append(unread, n)
		}
	}
	require.Equal(t, []string{"org/a#1 could not be read: HTTP 502 (request id 30)"}, unread)
	last := f.syncs[len(f.syncs)-1]
	require.LessOrEqual(t, len(last.Notes), maxNotes)
}

func TestNoteKindsAndBound(t *testing.T) {
	s := &State{}
	for i := range 3 * maxNotes {
		s.note(fmt.Sprintf("kind %d: detail", i))
		s.note(fmt.Sprintf("org/a#1 could not be read: error %d", i))
	}
	require.Len(t, s.Notes, maxNotes)
	require.Equal(t, "org/a#1 could not be read: error 23", s.Notes[maxNotes-1])
	require.Equal(t, 1, strings.Count(strings.Join(s.Notes, "\n"), "could not be read"))
	s.note("The draft was lifted.")
	s.note("The draft was lifted.")
	require.Equal(t, 1, strings.Count(strings.Join(s.Notes, "\n"), "The draft was lifted."))
}

// A close override and a PR build that arrive while the last step before
// continue-as-new runs are carried into the next run, which closes the target PR.
func TestCloseAndBuildCarriedThroughContinueAsNew(t *testing.T) {
	f := &fakeForge{origin: func(int) prgroupapi.OriginObservation { return prgroupapi.OriginObservation{Found: true, Open: true} }}
	var env *testsuite.TestWorkflowEnvironment
	second := PRBuild{Component: "c", SourceBranch: "g", Origin: OriginRef{RepoURL: "https://h/org/c", Number: 2}, Build: imagebuild.Build{Image: "quay.io/org/c", Digest: "sha256:" + strings.Repeat("c", 64), BuildUID: "pr-2", BuiltAt: time.Unix(20, 0)}}
	f.sync = func(call int, req prgroupapi.SyncRequest) prgroupapi.SyncResult {
		if call == 1 {
			// During the step: continue-as-new is suggested, a person asks to close,
			// and another PR build succeeds.
			env.SetContinueAsNewSuggested(true)
			env.UpdateWorkflow(UpdateClose, "upd-1", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { t.Errorf("close rejected: %v", err) },
				OnAccept: func() {}, OnComplete: func(any, error) {}}, "superseded")
			env.SignalWorkflow(SignalPRBuild, second)
		}
		return openDraft(call, req)
	}
	env = setupWorkflow(t, f)
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", Group: "g", Target: "bundle"})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can, "the run continued as new")
	var next Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Equal(t, "superseded", next.State.CloseRequested, "the close override is carried")
	require.True(t, slices.ContainsFunc(next.State.Entries, func(e Entry) bool { return e.BuildUID == "pr-2" }), "the build is carried")

	// The next run closes the target PR first, with the carried reason.
	f2 := &fakeForge{origin: f.origin, sync: openDraft}
	env2 := setupWorkflow(t, f2)
	env2.SetContinuedExecutionRunID("run-1") // as the server says of a continued run
	env2.ExecuteWorkflow(WorkflowName, next)
	require.True(t, env2.IsWorkflowCompleted())
	require.NoError(t, env2.GetWorkflowError())
	var st State
	require.NoError(t, env2.GetWorkflowResult(&st))
	require.Equal(t, PhaseClosed, st.Phase)
	require.Equal(t, "closed by the close override: superseded", st.Reason)
	require.Len(t, f2.closes, 1)
	require.True(t, f2.closes[0].Close)
	require.Equal(t, 5, f2.closes[0].Known.Number)
	require.Empty(t, f2.syncs, "nothing is pushed after the close was asked for")
}

// An originating PR the forge answered before and now answers "not found" for
// (a wrong forge, a token that lost access, a renamed repository) is unreadable,
// not closed: the target PR is neither closed nor changed on that answer; a note
// says so and the next poll reads it again.
func TestOriginNotFoundAfterSeenIsUnreadableNotClosed(t *testing.T) {
	f := &fakeForge{sync: openDraft}
	f.origin = func(call int) prgroupapi.OriginObservation {
		switch {
		case call == 1:
			return prgroupapi.OriginObservation{Found: true, Open: true}
		case call < 5:
			return prgroupapi.OriginObservation{Found: false}
		}
		return prgroupapi.OriginObservation{Found: true} // closed unmerged, for real
	}
	var closedAt []int
	env := setupWorkflow(t, f)
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == prgroupapi.CloseActivity {
			closedAt = append(closedAt, f.observed)
		}
	})
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", Group: "g", Target: "bundle"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var st State
	require.NoError(t, env.GetWorkflowResult(&st))
	require.Equal(t, PhaseClosed, st.Phase)
	require.Equal(t, []int{5}, closedAt, "the target PR is closed only when the forge says the origin closed")
	require.GreaterOrEqual(t, f.observed, 5)
	for i, s := range f.syncs {
		require.Equal(t, originOpen, s.Origins[0].State, "sync %d: a not-found answer leaves the origin open", i+1)
	}
	require.True(t, slices.ContainsFunc(f.syncs[len(f.syncs)-1].Notes, func(n string) bool {
		return strings.Contains(n, "org/a#1 could not be read") && strings.Contains(n, "not found")
	}), "a note says the origin could not be read: %q", f.syncs[len(f.syncs)-1].Notes)
}

// A PR build is verified when it enters, once: one the cluster did not build is
// proposed nowhere and its verdict is in the state; the refusal's Event goes on
// the target Component.
func TestPRBuildNobodyBuiltIsNotProposed(t *testing.T) {
	forged := PRBuild{Component: "c", SourceBranch: "g", Origin: OriginRef{RepoURL: "https://h/org/c", Number: 2}, Build: imagebuild.Build{Image: "quay.io/org/c", Digest: "sha256:" + strings.Repeat("f", 64), BuildUID: "forged", BuiltAt: time.Unix(20, 0)}}
	f := &fakeForge{sync: openDraft, cluster: buildchecktest.New()}
	f.cluster.Refuse(forged.Digest)
	f.origin = func(call int) prgroupapi.OriginObservation {
		if call > 3 {
			return prgroupapi.OriginObservation{Found: true} // closed unmerged: the group ends
		}
		return prgroupapi.OriginObservation{Found: true, Open: true}
	}
	env := setupWorkflow(t, f)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPRBuild, forged) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPRBuild, forged) }, 2*time.Minute)
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", Group: "g", Target: "bundle"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var st State
	require.NoError(t, env.GetWorkflowResult(&st))
	for i, s := range f.syncs {
		for _, row := range s.Rows {
			require.NotEqual(t, forged.Digest, row.Digest, "sync %d proposed the refused digest", i+1)
		}
	}
	require.False(t, slices.ContainsFunc(st.Origins, func(o Origin) bool { return o.Number == 2 }), "its origin is not followed either")
	require.Equal(t, 1, f.cluster.Count(forged.Digest), "a redelivery is not verified again")
	require.Len(t, st.BuildVerdicts, 2)
	require.True(t, st.BuildVerdicts[0].Verified)
	require.False(t, st.BuildVerdicts[1].Verified)
	req := f.cluster.Asked()[1]
	require.Equal(t, buildcheck.Subject{Kind: buildcheck.KindComponent, Name: "bundle"}, req.Subject)
	require.Equal(t, "quay.io/org/c@"+forged.Digest, req.PullSpec)
}

// A run started (not continued) with a state keeps none of it: its PR builds are
// verified like signals.
func TestPRGroupStateGivenAtStartIsNotTrusted(t *testing.T) {
	forged := Entry{Component: "c", Origin: "org/c#2", From: fromPullRequest, Build: imagebuild.Build{Image: "quay.io/org/c", Digest: "sha256:" + strings.Repeat("f", 64), BuildUID: "forged", BuiltAt: time.Unix(20, 0)}}
	f := &fakeForge{sync: openDraft, cluster: buildchecktest.New(), origin: func(call int) prgroupapi.OriginObservation {
		if call > 2 {
			return prgroupapi.OriginObservation{Found: true}
		}
		return prgroupapi.OriginObservation{Found: true, Open: true}
	}}
	f.cluster.Refuse(forged.Digest)
	env := setupWorkflow(t, f)
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", Group: "g", Target: "bundle", State: &State{Phase: PhaseDraft,
		Origins: []Origin{{OriginRef: OriginRef{RepoURL: "https://h/org/c", Number: 2}, State: originOpen}},
		Entries: []Entry{forged}, BuildVerdicts: []BuildVerdict{{Component: "c", Digest: forged.Digest, BuildUID: "forged", Verdict: buildcheck.Verdict{Verified: true}}}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	for _, s := range f.syncs {
		for _, row := range s.Rows {
			require.NotEqual(t, forged.Digest, row.Digest)
		}
	}
	require.Equal(t, 1, f.cluster.Count(forged.Digest), "the verdict the state carried was not believed")
}
