package changegroup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// ciCondition waits for the group's CIStarted condition to have reason and returns it.
func (s *scenario) ciCondition(name, reason string) metav1.Condition {
	s.t.Helper()
	cg := s.waitFor(name, "CIStarted "+reason, time.Minute, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		c := meta.FindStatusCondition(cg.Status.Conditions, appstudiov1alpha1.ConditionCIStarted)
		return c != nil && c.Reason == reason
	})
	return *meta.FindStatusCondition(cg.Status.Conditions, appstudiov1alpha1.ConditionCIStarted)
}

// groupEvents are the group's Events of reason (type: message).
func (s *scenario) groupEvents(name, reason string) []string {
	s.t.Helper()
	var list corev1.EventList
	require.NoError(s.t, s.w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(s.ns)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "ChangeGroup" && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Type+": "+e.Message)
		}
	}
	return out
}

// eventually waits for cond (30 s at most).
func (s *scenario) eventually(what string, cond func() bool) {
	s.t.Helper()
	world.Eventually(s.t, 30*time.Second, what, func() (bool, error) { return cond(), nil })
}

// nudgeflowCIComments are the PR's comments nudgeflow posted about CI not starting.
func (s *scenario) nudgeflowCIComments(n int) []string {
	var out []string
	for _, c := range s.f.Comments(s.ns, "bundle", n) {
		if strings.Contains(c, changegroupprapi.CommentMarker("ci-not-started")) {
			out = append(out, c)
		}
	}
	return out
}

// TestUntrustedBotAwaitsOkToTest, end to end: Pipelines as Code
// trusts only a maintainer on the bundle's repository, so the release — the one
// push without the skip marker, draft lifted — starts no pipeline: PaC answers
// nudgeflow's PR with its "Pending approval, waiting for an /ok-to-test" status.
// The group still completes its release (phase Ready: the builds are in the PR),
// then says CI did not start: CIStarted False AwaitingApproval, a Warning Event,
// one PR comment naming what a maintainer must do. The maintainer's /ok-to-test
// starts the one pipeline, the condition turns True with a Normal Event, no second
// comment appears, and the group completes when the PR is merged.
func TestUntrustedBotAwaitsOkToTest(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	s.explainOnFailure("g")
	shared.emu.RestrictCI(s.ns, "bundle", "maintainer")
	s.createGroup("g", []string{"operand-a", "operand-b"}, time.Hour)
	s.buildNow("operand-a", 1)
	held := s.draftPR()
	require.Zero(t, s.f.CIBuilds(s.ns, "bundle"))
	s.buildNow("operand-b", 1)

	cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)
	require.Equal(t, "2/2", cg.Status.Ready)
	prs := s.f.PRs(s.ns, "bundle")
	require.Len(t, prs, 1)
	pr := prs[0]
	require.Equal(t, held.Number, pr.Number)
	require.False(t, pr.Draft, "released: the draft is lifted")
	head, ok := s.f.Head(s.ns, "bundle", pr.Head)
	require.True(t, ok)
	require.NotContains(t, head.Message, "[skip ci]", "the release's head carries no skip marker")

	c := s.ciCondition("g", appstudiov1alpha1.CIReasonAwaitingApproval)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	require.Contains(t, c.Message, "/ok-to-test")
	require.Contains(t, c.Message, "nudgeflow[bot]", "the condition names the untrusted author")
	require.Zero(t, s.f.CIBuilds(s.ns, "bundle"), "PaC ran nothing for the untrusted bot")
	s.eventually("one Warning Event", func() bool { return len(s.groupEvents("g", appstudiov1alpha1.CIReasonAwaitingApproval)) == 1 })
	require.True(t, strings.HasPrefix(s.groupEvents("g", appstudiov1alpha1.CIReasonAwaitingApproval)[0], "Warning: "))
	s.eventually("one comment telling a maintainer what to do", func() bool { return len(s.nudgeflowCIComments(pr.Number)) == 1 })
	comment := s.nudgeflowCIComments(pr.Number)[0]
	require.Contains(t, comment, "comment `/ok-to-test` on this pull request")
	require.Contains(t, comment, "`nudgeflow[bot]` a trusted author")
	cg = s.group("g")
	require.Equal(t, appstudiov1alpha1.PhaseReady, cg.Status.Phase, "a missing pipeline is no failure of the group")

	// The maintainer approves: the one pipeline starts.
	require.NoError(t, shared.emu.CommentAs(s.ns, "bundle", pr.Number, githubemu.User{Login: "maintainer"}, "/ok-to-test"))
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"), "the /ok-to-test started the one pipeline")
	c = s.ciCondition("g", appstudiov1alpha1.CIReasonStarted)
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Contains(t, c.Message, "Pipelines as Code CI / bundle-on-pull-request")
	s.eventually("a Normal Event says the pipeline started", func() bool { return len(s.groupEvents("g", appstudiov1alpha1.CIReasonStarted)) == 1 })
	require.True(t, strings.HasPrefix(s.groupEvents("g", appstudiov1alpha1.CIReasonStarted)[0], "Normal: "))
	require.Len(t, s.nudgeflowCIComments(pr.Number), 1, "never a second comment")

	require.NoError(t, s.f.Merge(s.ns, "bundle", pr.Number))
	s.waitPhase("g", appstudiov1alpha1.PhaseCompleted)
	require.Len(t, s.nudgeflowCIComments(pr.Number), 1)
	require.Len(t, s.groupEvents("g", appstudiov1alpha1.CIReasonAwaitingApproval), 1)
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
	s.record("g")
}
