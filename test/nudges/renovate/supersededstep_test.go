package renovate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// olderBuildStepRefusesCase: the step itself refuses to write an older build's
// digest over a newer one (activities/renovate/branchcheck.go). Each build has its
// own tag, as Konflux's builds do (the source commit, no version Renovate would
// order: a semver-like tag would make it propose the newest tag instead), so
// Renovate would write the older build's digest if it ran: the last run, the same
// older build without the check, shows that it would.
func olderBuildStepRefusesCase(t *testing.T, tn *tenant) {
	ctx := context.Background()
	forge := tn.forge.Name()
	repoName := "ns/step-refuses-" + forge
	built := tn.w.registry.Host + "/" + repoName
	base, err := tn.w.registry.PushImage(ctx, repoName+":on-push-base")
	require.NoError(t, err)
	older, err := tn.w.registry.PushImage(ctx, repoName+":on-push-older")
	require.NoError(t, err)
	newer, err := tn.w.registry.PushImage(ctx, repoName+":on-push-newer")
	require.NoError(t, err)
	repo := "step-refuses"
	dockerfile := func(digest string) string { return "FROM " + built + "@" + digest + "\n" }
	tn.forge.CreateRepo(t, tn.owner, repo, "main", map[string]string{"Dockerfile": dockerfile(base)})
	tn.forge.CreateLabel(t, tn.owner, repo, renovate.NudgeLabel)
	olderStart := time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC)
	newerStart := olderStart.Add(time.Minute)

	// The newer build's run lands first: its commit carries its build's start.
	n := nudge{Run: "step-newer", Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo,
		Image: built + ":on-push-newer", Digest: newer, BuiltAt: newerStart}
	r := tn.runNudge(t, n)
	requireSucceeded(t, r)
	prs := tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "log %s", r.LogPath)
	head := prs[0].HeadSHA
	got, _ := tn.forge.FileAt(t, tn.owner, repo, nudgeBranchOf(n), "Dockerfile")
	require.Equal(t, dockerfile(newer), got, "log %s", r.LogPath)

	// The older build's run starts after it (nothing on the cluster stopped it):
	// its step reads the branch's head, finds the newer build, and writes nothing.
	n = nudge{Run: "step-older", Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo,
		Image: built + ":on-push-older", Digest: older, BuiltAt: olderStart}
	r = tn.runNudge(t, n)
	require.True(t, r.Status.Done, "%+v", r.Status)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome,
		Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeSuperseded + ":step-newer")}}, r.Run.Status.Results, "log %s", r.LogPath)
	require.False(t, r.Status.Succeeded, "%+v", r.Status)
	require.False(t, r.Status.Cancelled, "not a person's cancel: %+v", r.Status)
	require.Equal(t, "step-newer", r.Status.SupersededBy, "the run the head's trailer names")
	require.Equal(t, renovaterun.ReasonSupersededOnBranch, r.Status.Reason)
	require.Contains(t, r.Log, "nudgeflow: branch "+nudgeBranchOf(n)+" holds commit", "the log says why, where a person reads it")
	require.NotContains(t, r.Log, "Repository started", "Renovate did not run; log %s", r.LogPath)
	require.NotContains(t, r.Log, tn.forge.Token(), "the forge token never reaches the log")
	outcome, _, _ := outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "superseded", outcome)
	prs = tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1)
	require.Equal(t, head, prs[0].HeadSHA, "the branch is as the newer build left it")
	got, _ = tn.forge.FileAt(t, tn.owner, repo, nudgeBranchOf(n), "Dockerfile")
	require.Equal(t, dockerfile(newer), got)
	t.Logf("renovate-e2e forge=%s case=older-build-step-refuses outcome=%s superseded_by=%s head_unchanged=%t run=%q",
		forge, outcome, r.Status.SupersededBy, prs[0].HeadSHA == head, r.Cost)

	// The same older build, its start unknown (no trailer to compare, no check):
	// Renovate runs and writes the older digest over the newer one. This is what
	// the step's refusal prevented.
	n.Run, n.BuiltAt = "step-older-unchecked", time.Time{}
	r = tn.runNudge(t, n)
	requireSucceeded(t, r)
	got, _ = tn.forge.FileAt(t, tn.owner, repo, nudgeBranchOf(n), "Dockerfile")
	require.Equal(t, dockerfile(older), got, "unchecked, the older build's run rolls the branch back; log %s", r.LogPath)
	t.Logf("renovate-e2e forge=%s case=older-build-unchecked-rolls-back outcome=ok rolled_back=%t", forge, strings.Contains(got, older))
}
