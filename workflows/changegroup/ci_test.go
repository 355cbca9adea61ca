package changegroup

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/pac"
)

// The tests of the CIStarted watch: two members build a minute apart (the first
// is pushed held after the 5 s debounce), the group releases when the second
// arrives (all ready: no debounce), and the PR is merged later.

const released = 2 * time.Minute

func ciInput(poll, grace time.Duration) Input {
	return Input{Namespace: "tenant", Name: "bundle-x-update", UID: "uid-1",
		Settings: Settings{Debounce: 5 * time.Second, PollInterval: poll, CIStartGrace: grace}}
}

func (h *harness) releaseThenMergeAt(merge time.Duration) {
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Minute, "b", "sha256:b1", 2*time.Hour)
	h.prEvent(merge, changegroupapi.PREvent{DeliveryID: "merge", Action: "closed", Number: 7, Merged: true, Closed: true})
}

// ciConditions are the CIStarted conditions of every status written, in order.
func (f *fakeWorld) ciConditions() []metav1Condition {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []metav1Condition
	for _, st := range f.statuses {
		for _, c := range st.Conditions {
			if c.Type == appstudiov1alpha1.ConditionCIStarted {
				out = append(out, c)
			}
		}
	}
	return out
}

func (f *fakeWorld) lastCI() metav1Condition {
	cs := f.ciConditions()
	if len(cs) == 0 {
		return metav1Condition{}
	}
	return cs[len(cs)-1]
}

func (f *fakeWorld) setCI(o changegroupprapi.CIObserved) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ci = func() changegroupprapi.CIObserved { return o }
}

func awaitingApproval() changegroupprapi.CIObserved {
	return changegroupprapi.CIObserved{AwaitingApproval: true, Author: "nudgeflow-bot",
		Detail: "User nudgeflow-bot is not allowed to trigger CI via pull_request in this repo."}
}

// A check appears on the released head: the condition turns True at the first
// look, no comment, no Event, and the group stops reading CI.
func TestCIStartedSetsTheConditionTrue(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.releaseThenMergeAt(3 * time.Hour)
	s := h.run(ciInput(time.Hour, 10*time.Minute))

	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Len(t, f.ciReads, 1, "one look finds the pipeline; the group reads CI no more")
	require.Equal(t, f.lastSync().Mode, changegroupprapi.ModeRelease)
	require.Equal(t, s.CI.SHA, f.ciReads[0].SHA, "the released head is read")
	require.Equal(t, fmtSHA(2), s.CI.SHA, "the release is the second push (the first held a)")
	c := f.lastCI()
	require.Equal(t, "True", string(c.Status))
	require.Equal(t, appstudiov1alpha1.CIReasonStarted, c.Reason)
	require.Contains(t, c.Message, "Pipelines as Code CI / bundle-on-pull-request")
	require.Empty(t, f.comments, "no comment when CI started")
	require.Empty(t, f.events, "no Event when CI started")
	require.Equal(t, "Unknown", string(f.ciConditions()[0].Status), "the release says it waits for the pipeline")
	require.Equal(t, appstudiov1alpha1.CIReasonWaiting, f.ciConditions()[0].Reason)
}

// Nothing reports within the grace period: the condition turns False
// NoPipelineStarted at the end of the grace, one comment and one Warning Event are
// made, the group keeps looking, never comments again (a failed comment is
// retried, once posted it is never repeated), and still completes when merged:
// it is a warning, not a failure.
func TestNoPipelineWithinTheGraceWarnsOnce(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.setCI(changegroupprapi.CIObserved{Author: "nudgeflow-bot"})
	f.commentFailures = 1
	h := newHarness(t, f)
	var atGrace []metav1Condition
	h.at(released+10*time.Minute-time.Second, func() { atGrace = f.ciConditions() })
	h.releaseThenMergeAt(4 * time.Hour)
	s := h.run(ciInput(time.Hour, 10*time.Minute))

	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase, "a missing pipeline is no failure of the group")
	require.Empty(t, f.handedBack)
	require.NotEmpty(t, atGrace)
	for _, c := range atGrace {
		require.Equal(t, appstudiov1alpha1.CIReasonWaiting, c.Reason, "no warning before the grace period ends")
	}
	c := f.lastCI()
	require.Equal(t, "False", string(c.Status))
	require.Equal(t, appstudiov1alpha1.CIReasonNoPipelineStarted, c.Reason)
	require.Contains(t, c.Message, "/ok-to-test")
	require.Contains(t, c.Message, "nudgeflow-bot")
	require.GreaterOrEqual(t, len(f.ciReads), 4, "the group keeps looking every poll interval until the merge")
	require.Len(t, f.comments, 2, "the comment failed once and was tried again at the next look")
	require.Len(t, f.posted, 1, "one comment")
	require.Equal(t, ciCommentKey, f.posted[0].Key)
	require.Contains(t, f.posted[0].Body, "no check or commit status appeared")
	require.Len(t, f.events, 1, "one Event")
	require.Equal(t, "Warning", f.events[0].Type)
	require.Equal(t, appstudiov1alpha1.CIReasonNoPipelineStarted, f.events[0].Reason)
	require.Equal(t, s.CI.SHA, f.events[0].Key)
	require.Equal(t, 1, s.ForgeWrites-forgeWritesOfSyncs(f), "the comment is counted as a forge write")
}

func forgeWritesOfSyncs(f *fakeWorld) int { return 2 * len(f.syncs) }

// A forge that refuses the comment (the bot may not comment: a 4xx) is asked once;
// the condition and the Event still say what a maintainer must do.
func TestRefusedCommentIsNotAskedAgain(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.setCI(awaitingApproval())
	f.commentRefused = true
	h := newHarness(t, f)
	h.releaseThenMergeAt(time.Hour)
	s := h.run(ciInput(2*time.Minute, 10*time.Minute))
	require.Greater(t, len(f.ciReads), 20, "the group kept looking")
	require.Len(t, f.comments, 1, "a refused comment is not asked for again")
	require.Empty(t, f.posted)
	require.Contains(t, s.CI.CommentRefused, "403")
	require.Len(t, f.events, 1)
	require.Equal(t, appstudiov1alpha1.CIReasonAwaitingApproval, f.lastCI().Reason)
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
}

// Pipelines as Code reports that it waits for approval: the group says so at the
// first look, well within the grace period (condition AwaitingApproval, one
// comment, one Event); a later start turns the condition True with a Normal Event,
// the comment stays the only one, and the group stops reading CI.
func TestAwaitingApprovalThenALaterStart(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.setCI(awaitingApproval())
	h := newHarness(t, f)
	var readsAtWarning, postedAtWarning, eventsAtWarning, readsAtFlip int
	var beforeFlip metav1Condition
	h.at(released+3*time.Minute, func() { // after the first look, at +2 minutes
		f.mu.Lock()
		readsAtWarning, postedAtWarning, eventsAtWarning = len(f.ciReads), len(f.posted), len(f.events)
		f.mu.Unlock()
	})
	h.at(30*time.Minute, func() {
		beforeFlip = f.lastCI()
		f.mu.Lock()
		readsAtFlip = len(f.ciReads)
		f.mu.Unlock()
		f.setCI(changegroupprapi.CIObserved{Started: true, Names: []string{"Pipelines as Code CI", "Pipelines as Code CI / b-on-pull-request"}})
	})
	h.releaseThenMergeAt(2 * time.Hour)
	s := h.run(ciInput(2*time.Minute, time.Hour))

	require.Equal(t, []int{1, 1, 1}, []int{readsAtWarning, postedAtWarning, eventsAtWarning},
		"the first look (two minutes after the release) warns: one comment, one Event")
	require.Equal(t, "False", string(beforeFlip.Status))
	require.Equal(t, appstudiov1alpha1.CIReasonAwaitingApproval, beforeFlip.Reason, "reported at once, long before the hour of grace")
	require.Contains(t, beforeFlip.Message, "User nudgeflow-bot is not allowed to trigger CI")
	require.Contains(t, beforeFlip.Message, "a maintainer must comment /ok-to-test on the pull request, or make nudgeflow-bot a trusted author")

	c := f.lastCI()
	require.Equal(t, "True", string(c.Status))
	require.Equal(t, appstudiov1alpha1.CIReasonStarted, c.Reason)
	require.Len(t, f.ciReads, readsAtFlip+1, "the first look after the start is the last")
	require.Len(t, f.posted, 1, "one comment, never a second")
	require.Contains(t, f.posted[0].Body, "Pipelines as Code is waiting for approval")
	require.Contains(t, f.posted[0].Body, "`nudgeflow-bot`")
	require.Len(t, f.events, 2)
	require.Equal(t, "Warning", f.events[0].Type)
	require.Equal(t, appstudiov1alpha1.CIReasonAwaitingApproval, f.events[0].Reason)
	require.Equal(t, "Normal", f.events[1].Type)
	require.Equal(t, appstudiov1alpha1.CIReasonStarted, f.events[1].Reason)
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
}

// A push after the release (a rebuild) moves the watch to the new head.
func TestPushAfterReleaseMovesTheWatch(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.setCI(changegroupprapi.CIObserved{})
	h := newHarness(t, f)
	h.build(20*time.Minute, "a", "sha256:a2", 3*time.Hour)
	h.releaseThenMergeAt(3 * time.Hour)
	s := h.run(ciInput(time.Hour, 10*time.Minute))
	require.Len(t, f.syncs, 3, "held, released, the rebuild")
	require.Equal(t, fmtSHA(3), s.CI.SHA)
	require.Equal(t, fmtSHA(3), f.ciReads[len(f.ciReads)-1].SHA)
	require.Equal(t, fmtSHA(2), f.events[0].Key, "the warning was about the first released head")
}

// A group released in the shape before versionCIStart never looks at CI and has
// no CIStarted condition.
func TestNoCIWatchInTheShapeBefore(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.env.OnGetVersion(versionCIStart, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.releaseThenMergeAt(3 * time.Hour)
	s := h.run(ciInput(time.Hour, 10*time.Minute))
	require.Nil(t, s.CI)
	require.Empty(t, f.ciReads)
	require.Empty(t, f.ciConditions())
}

// The watch is state: continue-as-new carries it (the next run looks at once).
func TestCIWatchSurvivesContinueAsNew(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.setCI(awaitingApproval())
	h := newHarness(t, f)
	h.releaseThenMergeAt(3 * time.Hour)
	h.at(20*time.Minute, func() { h.env.SetContinueAsNewSuggested(true) })
	h.env.ExecuteWorkflow(changegroupapi.WorkflowName, ciInput(2*time.Minute, time.Hour))
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can))
	var next Input
	require.NoError(t, converterFor().FromPayloads(can.Input, &next))
	w := next.State.CI
	require.NotNil(t, w)
	require.Equal(t, appstudiov1alpha1.CIReasonAwaitingApproval, w.Reason)
	require.True(t, w.Commented, "the next run knows the comment is posted")
	require.Equal(t, appstudiov1alpha1.CIReasonAwaitingApproval, w.Evented)
	require.Equal(t, fmtSHA(2), w.SHA)
}

// The comment names both remedies, and Pipelines as Code never reads it as an
// `/ok-to-test` (the command appears only inside a sentence).
func TestCICommentIsNoOkToTest(t *testing.T) {
	for _, w := range []*CIWatch{
		{SHA: fmtSHA(1), Reason: appstudiov1alpha1.CIReasonAwaitingApproval, Author: "nudgeflow-bot", Detail: awaitingApproval().Detail},
		{SHA: fmtSHA(1), Reason: appstudiov1alpha1.CIReasonNoPipelineStarted, ReleasedAt: time.Unix(0, 0), Deadline: time.Unix(600, 0)},
	} {
		r := &run{in: Input{Namespace: "tenant", Name: "g"}, s: &State{CI: w}}
		body := r.ciComment()
		require.False(t, pac.IsOkToTest(body), "the comment would approve itself:\n%s", body)
		require.False(t, pac.IsOkToTest(changegroupprapi.CommentMarker(ciCommentKey)+"\n"+body))
		require.Contains(t, body, "comment `/ok-to-test` on this pull request")
		require.Contains(t, body, "a trusted author")
		require.Contains(t, body, "ChangeGroup `tenant/g`")
		require.True(t, strings.Contains(body, "10m0s") || w.Reason == appstudiov1alpha1.CIReasonAwaitingApproval)
	}
}

func fmtSHA(syncs int) string {
	return (&fakeWorld{syncs: make([]changegroupprapi.SyncRequest, syncs)}).head()
}
