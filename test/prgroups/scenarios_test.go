package prgroups_test

import (
	"context"
	"strings"
	"testing"

	"fmt"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/world"
	prgroupwf "github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

func draft(p githubemu.PR) bool { return p.State == "open" && p.Draft }
func ready(p githubemu.PR) bool { return p.State == "open" && !p.Draft }

// TestCommonParentImage is ADR 29's first use case: a PR on the parent image's
// repository builds a new parent; nudgeflow proposes it to the child as a draft PR
// on update-2023-06-07@nudgeflow-child that links the parent PR; merging the parent
// PR puts the push build's digest in and lifts the draft.
func TestCommonParentImage(t *testing.T) {
	s := newScenario(t)
	old := digestOf("parent-0")
	s.repo("parent", map[string]string{"Containerfile": "FROM registry.access.redhat.com/ubi9\n"})
	s.repo("child", map[string]string{"Dockerfile": "FROM " + imageOf("parent") + "@" + old + "\nRUN make\n"})
	s.component("parent", "parent", "child")
	s.component("child", "child")

	const branch = "update-2023-06-07"
	n, sha := s.openPR("parent", branch, map[string]string{"Containerfile": "FROM registry.access.redhat.com/ubi9\nRUN dnf update -y\n"})
	prDigest := digestOf("parent-pr-1")
	s.prBuild("parent", "parent", branch, n, sha, prDigest)

	target := branch + "@nudgeflow-child"
	pr := s.targetPR("child", target, "a draft", draft)
	require.Equal(t, "main", pr.Base)
	require.Contains(t, s.fileAt("child", pr, "Dockerfile"), imageOf("parent")+"@"+prDigest)
	contains(t, pr.Body, "Do not merge this pull request out of order", s.ns+"/parent#1", "/"+s.ns+"/parent/pull/1")
	require.Equal(t, prgroupwf.PhaseDraft, s.query(branch, "child").Phase)
	s.noPushPathNudges()

	// The parent PR merges; the group sees it (the forge's webhook) and waits for
	// the push build, which PaC builds from the merge commit minutes later. Its
	// success wakes the group (the poll is an hour here): the draft lifts at once.
	require.NoError(t, emu.MergePR(s.ns, "parent", n))
	world.Eventually(t, 30*time.Second, "the group waits for the push build", func() (bool, error) {
		if p := s.query(branch, "child").Phase; p != prgroupwf.PhaseWaiting {
			return false, fmt.Errorf("phase %s", p)
		}
		return true, nil
	})
	pushDigest := digestOf("parent-push-1")
	push := s.pushBuild("parent", emu.MergeSHA(s.ns, "parent", n), pushDigest)
	pr = s.targetPR("child", target, "ready for review", ready)
	require.Contains(t, s.originEvents(branch, "child"), prgroupwf.OriginEvent{Action: "push-build", DeliveryID: string(push.UID)},
		"the push build woke the group")
	require.Contains(t, s.fileAt("child", pr, "Dockerfile"), imageOf("parent")+"@"+pushDigest)
	contains(t, pr.Body, "safe to merge", "push build")

	require.NoError(t, emu.MergePR(s.ns, "child", pr.Number))
	st := s.waitEnded(branch, "child")
	require.Equal(t, prgroupwf.PhaseMerged, st.Phase)
	s.record(branch, "child")
}

// operands sets up ADR 29's OLM case with components in different repositories:
// operands a, b and c nudge the bundle, whose CSV references them.
func operands(t *testing.T) *scenario {
	s := newScenario(t)
	var csv strings.Builder
	csv.WriteString("kind: ClusterServiceVersion\nspec:\n  relatedImages:\n")
	for _, c := range []string{"operand-a", "operand-b", "operand-c"} {
		csv.WriteString("  - name: " + c + "\n    image: " + imageOf(c) + "@" + digestOf(c+"-0") + "\n")
		s.repo(c, map[string]string{"main.go": "package main\n"})
		s.component(c, c, "bundle")
	}
	s.repo("bundle", map[string]string{"bundle/manifests/operator.clusterserviceversion.yaml": csv.String()})
	s.component("bundle", "bundle")
	return s
}

const csvPath = "bundle/manifests/operator.clusterserviceversion.yaml"

// TestOperandsSameAndDifferentBranches: PRs of two operands on the same branch name
// pile up in one bundle PR; a third operand on another branch name gets its own.
// Merging one PR of the group keeps the draft (the other is open); a new commit on
// the open one updates the bundle PR; merging it too lifts the draft with both push
// builds' digests.
func TestOperandsSameAndDifferentBranches(t *testing.T) {
	s := operands(t)
	const feature = "feature-1234"
	na, sha := s.openPR("operand-a", feature+"@a", map[string]string{"main.go": "package main // a\n"})
	s.prBuild("operand-a", "operand-a", feature+"@a", na, sha, digestOf("a-pr-1"))
	nb, shb := s.openPR("operand-b", feature, map[string]string{"main.go": "package main // b\n"})
	s.prBuild("operand-b", "operand-b", feature, nb, shb, digestOf("b-pr-1"))
	nc, shc := s.openPR("operand-c", "other-feature", map[string]string{"main.go": "package main // c\n"})
	s.prBuild("operand-c", "operand-c", "other-feature", nc, shc, digestOf("c-pr-1"))

	target := feature + "@nudgeflow-bundle"
	// The body follows the commit in a later write: wait for both.
	pr := s.targetPR("bundle", target, "a draft with a's and b's digests, linking both PRs", func(p githubemu.PR) bool {
		if !draft(p) {
			return false
		}
		csv, _ := emuFile(s, p)
		return strings.Contains(csv, digestOf("a-pr-1")) && strings.Contains(csv, digestOf("b-pr-1")) &&
			strings.Contains(p.Body, s.ns+"/operand-a#1") && strings.Contains(p.Body, s.ns+"/operand-b#1")
	})
	csv := s.fileAt("bundle", pr, csvPath)
	require.Contains(t, csv, digestOf("operand-c-0"), "c is in another group")
	contains(t, pr.Body, s.ns+"/operand-a#1", s.ns+"/operand-b#1")
	other := s.targetPR("bundle", "other-feature@nudgeflow-bundle", "a draft with c's digest", draft)
	require.NotEqual(t, pr.Number, other.Number)
	require.Contains(t, s.fileAt("bundle", other, csvPath), digestOf("c-pr-1"))
	s.noPushPathNudges()

	// a merges first: b is still open, the bundle PR stays a draft.
	require.NoError(t, emu.MergePR(s.ns, "operand-a", na))
	s.pushBuild("operand-a", emu.MergeSHA(s.ns, "operand-a", na), digestOf("a-push-1"))
	pr = s.targetPR("bundle", target, "a's push build in, still a draft", func(p githubemu.PR) bool {
		csv, _ := emuFile(s, p)
		return draft(p) && strings.Contains(csv, digestOf("a-push-1"))
	})

	// A new commit on b: its new PR build replaces b's digest.
	shb2 := s.pushCommit("operand-b", feature, map[string]string{"main.go": "package main // b, fixed\n"})
	s.prBuild("operand-b", "operand-b", feature, nb, shb2, digestOf("b-pr-2"))
	s.targetPR("bundle", target, "b's second PR build in", func(p githubemu.PR) bool {
		csv, _ := emuFile(s, p)
		return draft(p) && strings.Contains(csv, digestOf("b-pr-2")) && !strings.Contains(csv, digestOf("b-pr-1"))
	})

	// b merges: both push builds in, the draft is lifted.
	require.NoError(t, emu.MergePR(s.ns, "operand-b", nb))
	s.pushBuild("operand-b", emu.MergeSHA(s.ns, "operand-b", nb), digestOf("b-push-1"))
	pr = s.targetPR("bundle", target, "ready with both push builds", ready)
	csv = s.fileAt("bundle", pr, csvPath)
	require.Contains(t, csv, digestOf("a-push-1"))
	require.Contains(t, csv, digestOf("b-push-1"))
	require.NotContains(t, csv, digestOf("b-pr-2"))
	require.Equal(t, prgroupwf.PhaseReady, s.query(feature, "bundle").Phase)
}

func emuFile(s *scenario, p githubemu.PR) (string, bool) {
	return emu.FileAt(s.ns, "bundle", p.HeadSHA, csvPath)
}

// TestAllOriginatingPRsClosed: the only originating PR is closed unmerged; the
// bundle PR is closed with a comment that says why.
func TestAllOriginatingPRsClosed(t *testing.T) {
	s := operands(t)
	n, sha := s.openPR("operand-a", "doomed", map[string]string{"main.go": "package main // a\n"})
	s.prBuild("operand-a", "operand-a", "doomed", n, sha, digestOf("a-pr-doomed"))
	pr := s.targetPR("bundle", "doomed@nudgeflow-bundle", "a draft", draft)
	require.NoError(t, emu.ClosePR(s.ns, "operand-a", n))
	pr = s.targetPR("bundle", "doomed@nudgeflow-bundle", "closed", func(p githubemu.PR) bool { return p.State == "closed" && !p.Merged })
	comments := strings.Join(emu.Comments(s.ns, "bundle", pr.Number), "\n")
	contains(t, comments, "closed without merging", s.ns+"/operand-a#1")
	st := s.waitEnded("doomed", "bundle")
	require.Equal(t, prgroupwf.PhaseClosed, st.Phase)
	s.record("doomed", "bundle")
}

// TestTargetMergedOutOfOrder: a person merges the draft bundle PR before the operand
// PR. nudgeflow warns on it; once the operand PR merges and its push build is in, a
// follow-up PR (ready for review) replaces the pull-request build's digest.
func TestTargetMergedOutOfOrder(t *testing.T) {
	s := operands(t)
	n, sha := s.openPR("operand-a", "hasty", map[string]string{"main.go": "package main // a\n"})
	s.prBuild("operand-a", "operand-a", "hasty", n, sha, digestOf("a-pr-hasty"))
	target := "hasty@nudgeflow-bundle"
	early := s.targetPR("bundle", target, "a draft", draft)
	require.NoError(t, emu.MergePR(s.ns, "bundle", early.Number))
	world.Eventually(t, 60*time.Second, "a warning on the PR merged out of order", func() (bool, error) {
		return strings.Contains(strings.Join(emu.Comments(s.ns, "bundle", early.Number), "\n"), "merged before its originating pull requests"), nil
	})

	require.NoError(t, emu.MergePR(s.ns, "operand-a", n))
	s.pushBuild("operand-a", emu.MergeSHA(s.ns, "operand-a", n), digestOf("a-push-hasty"))
	follow := s.targetPR("bundle", target, "a follow-up PR, ready", func(p githubemu.PR) bool { return p.Number != early.Number && ready(p) })
	require.Contains(t, s.fileAt("bundle", follow, csvPath), digestOf("a-push-hasty"))
	contains(t, follow.Body, "merged before its originating pull requests")
	require.NoError(t, emu.MergePR(s.ns, "bundle", follow.Number))
	st := s.waitEnded("hasty", "bundle")
	require.Equal(t, prgroupwf.PhaseMerged, st.Phase)
	require.Len(t, st.MergedEarly, 1)
	s.record("hasty", "bundle")
}

// TestOverrides: release-now lifts the draft while the originating PR is open;
// close closes the target PR with the reason and ends the workflow.
func TestOverrides(t *testing.T) {
	s := operands(t)
	n, sha := s.openPR("operand-a", "urgent", map[string]string{"main.go": "package main // a\n"})
	s.prBuild("operand-a", "operand-a", "urgent", n, sha, digestOf("a-pr-urgent"))
	target := "urgent@nudgeflow-bundle"
	s.targetPR("bundle", target, "a draft", draft)
	id := prgroupwf.WorkflowID(s.ns, "urgent", "bundle")
	ctx := context.Background()
	// The workflow knows its PR once the sync's result is in (the PR shows a moment earlier).
	world.Eventually(t, 30*time.Second, "the workflow in phase Draft", func() (bool, error) {
		return s.query("urgent", "bundle").Phase == prgroupwf.PhaseDraft, nil
	})
	h, err := s.w.TemporalClient.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: prgroupwf.UpdateReleaseNow,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	pr := s.targetPR("bundle", target, "ready after release-now", ready)
	contains(t, pr.Body, "release-now override")
	// A second release-now is refused by the validator.
	h, err = s.w.TemporalClient.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: prgroupwf.UpdateReleaseNow,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	require.Error(t, err)

	h, err = s.w.TemporalClient.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: prgroupwf.UpdateClose,
		Args: []any{"the feature was dropped"}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	st := s.waitEnded("urgent", "bundle")
	require.Equal(t, prgroupwf.PhaseClosed, st.Phase)
	pr = s.targetPR("bundle", target, "closed", func(p githubemu.PR) bool { return p.State == "closed" })
	contains(t, strings.Join(emu.Comments(s.ns, "bundle", pr.Number), "\n"), "the feature was dropped")
}

// TestTargetClosedByPersonThenOriginMerged: a person closes the draft bundle PR while
// the operand PR is open; when the operand PR then merges, nudgeflow proposes nothing
// again and the group ends Closed, saying a person closed it (the versioned path of
// step: before it, the run ended as if there had been nothing to propose).
func TestTargetClosedByPersonThenOriginMerged(t *testing.T) {
	s := operands(t)
	n, sha := s.openPR("operand-a", "declined", map[string]string{"main.go": "package main // a\n"})
	s.prBuild("operand-a", "operand-a", "declined", n, sha, digestOf("a-pr-declined"))
	target := "declined@nudgeflow-bundle"
	pr := s.targetPR("bundle", target, "a draft", draft)
	require.NoError(t, emu.ClosePR(s.ns, "bundle", pr.Number))
	world.Eventually(t, 60*time.Second, "the workflow sees the person's close", func() (bool, error) {
		return s.query("declined", "bundle").Phase == prgroupwf.PhaseClosed, nil
	})
	require.NoError(t, emu.MergePR(s.ns, "operand-a", n))
	s.pushBuild("operand-a", emu.MergeSHA(s.ns, "operand-a", n), digestOf("a-push-declined"))
	st := s.waitEnded("declined", "bundle")
	require.Equal(t, prgroupwf.PhaseClosed, st.Phase)
	require.Equal(t, "the target PR was closed by a person", st.Reason)
	prs := 0
	for _, p := range emu.PRs(s.ns, "bundle") {
		if p.Head == target {
			prs++
		}
	}
	require.Equal(t, 1, prs, "nudgeflow did not propose the group again")
	s.record("declined", "bundle")
}
