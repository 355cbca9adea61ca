package renovate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
)

// TestRenovateNudgeContract runs every case on every forge landingforge starts: the
// forges in parallel, and on each forge the cases that share nothing in
// parallel too (the world bounds how many Renovate runs go at once).
func TestRenovateNudgeContract(t *testing.T) {
	w := sharedWorld(t)
	for _, name := range landingforge.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tn := newTenant(t, w, landingforge.Start(t, name))
			t.Run("immediate-then-later-builds", func(t *testing.T) { t.Parallel(); nudgePRCases(t, tn) })
			t.Run("private-image", func(t *testing.T) { t.Parallel(); privateImageCase(t, tn) })
			t.Run("cancel", func(t *testing.T) { t.Parallel(); cancelCase(t, tn) })
			t.Run("older-build-step-refuses", func(t *testing.T) { t.Parallel(); olderBuildStepRefusesCase(t, tn) })
		})
	}
}

const (
	nudging = "operand"
	nudged  = "consumer"
)

// nudgeBranch is the branch build-service's config makes Renovate push:
// its prefix, then additionalBranchPrefix "<nudged>-", then the slug of the
// group "Component Update <nudging>".
var nudgeBranch = renovate.BranchPrefix + nudged + "-component-update-" + nudging

// nudgeTitle is Renovate's title for the group's digest update: the action,
// commitMessageTopic (the nudging component) and the new digest's first seven
// hex digits.
func nudgeTitle(digest string) string {
	return "Update " + nudging + " to " + strings.TrimPrefix(digest, "sha256:")[:7]
}

// nudgePRCases are cases a and b: an immediate nudge opens the PR
// build-service's Renovate would open; a second build of the same component
// updates that PR; an older build's run finishing later does not roll it back.
func nudgePRCases(t *testing.T, tn *tenant) {
	ctx := context.Background()
	forge := tn.forge.Name()
	// One image repository per forge: the forges run at once and case b moves the tag.
	built := tn.w.registry.Host + "/ns/" + nudging + "-" + forge
	image := built + ":v1"
	// A ReleasePlanAdmission's distribution repository: the same image once
	// released, written in the nudged repository under its released name.
	released := "registry.example.com/released/" + nudging
	old, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/")) // the build the repo refers to
	require.NoError(t, err)
	first, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/")) // the build being nudged
	require.NoError(t, err)

	repo := "immediate"
	bumped := map[string]string{
		"Dockerfile":    "FROM " + built + "@" + old + "\nRUN true\n",
		"Containerfile": "FROM " + released + ":v1@" + old + "\n",
		".tekton/consumer-push.yaml": "apiVersion: tekton.dev/v1\nkind: PipelineRun\nspec:\n  pipelineSpec:\n    tasks:\n" +
			"      - name: check\n        taskSpec:\n          steps:\n            - name: run\n              image: " + image + "@" + old + "\n",
		"bundle/manifests/consumer.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n" +
			"metadata:\n  name: consumer.v0.1.0\n  annotations:\n    containerImage: " + built + "@" + old + "\n" +
			"spec:\n  relatedImages:\n    - name: " + nudging + "\n      image: " + released + "@" + old + "\n",
	}
	untouched := map[string]string{"README.md": "outside fileMatch: " + built + "@" + old + "\n"}
	files := map[string]string{}
	for p, c := range bumped {
		files[p] = c
	}
	for p, c := range untouched {
		files[p] = c
	}
	tn.forge.CreateRepo(t, tn.owner, repo, "main", files)
	tn.forge.CreateLabel(t, tn.owner, repo, renovate.NudgeLabel)
	n := nudge{Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo, Image: image, DistributionRepos: []string{released}}

	// a. The immediate nudge.
	n.Run, n.Digest = "immediate-1", first
	r := tn.runNudge(t, n)
	requireSucceeded(t, r)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeOK)}},
		r.Run.Status.Results, "the outcome nudgeflow reads")
	prs := tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "log %s", r.LogPath)
	pr := prs[0]
	require.Equal(t, nudgeBranch, pr.HeadRef)
	require.Equal(t, nudgeTitle(first), pr.Title)
	require.Contains(t, pr.Labels, renovate.NudgeLabel, "the nudge label the tenant created is applied")
	require.Contains(t, pr.Body, "Image created from '"+repoAtSHA(nudging)+"'", "the header")
	require.Contains(t, pr.Body, "To execute skipped test pipelines write comment `/ok-to-test`", "the footer")
	require.Contains(t, pr.Body, footerSecondLine(tn.forge), "the footer")
	filesBumped := 0
	for path, content := range bumped {
		got, ok := tn.forge.FileAt(t, tn.owner, repo, pr.HeadRef, path)
		require.True(t, ok, path)
		require.Equal(t, strings.ReplaceAll(content, old, first), got, "%s: every reference to the image, the released name too, now has the build's digest", path)
		filesBumped++
	}
	for path, content := range untouched {
		got, ok := tn.forge.FileAt(t, tn.owner, repo, pr.HeadRef, path)
		require.True(t, ok, path)
		require.Equal(t, content, got, "%s is outside fileMatch", path)
	}
	outcome, _, _ := outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "ok", outcome, "the forge shows the digest in the PR")
	t.Logf("renovate-e2e forge=%s case=immediate outcome=%s files_bumped=%d pr=#%d branch=%s title=%q labels=%v run=%q",
		forge, outcome, filesBumped, pr.Number, pr.HeadRef, pr.Title, pr.Labels, r.Cost)

	// b. A second build of the same component: the same PR now has its digest.
	second, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/"))
	require.NoError(t, err)
	n.Run, n.Digest = "second-build", second
	r = tn.runNudge(t, n)
	requireSucceeded(t, r)
	prs = tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "the second build updates the nudge PR, it opens no other; log %s", r.LogPath)
	require.Equal(t, pr.Number, prs[0].Number)
	require.Equal(t, nudgeBranch, prs[0].HeadRef)
	require.Equal(t, nudgeTitle(second), prs[0].Title, "the title follows the digest")
	for path, content := range bumped {
		got, _ := tn.forge.FileAt(t, tn.owner, repo, nudgeBranch, path)
		require.Equal(t, strings.ReplaceAll(content, old, second), got, "%s has the second build's digest", path)
	}
	outcome, _, _ = outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "ok", outcome, "the forge shows the second digest in the PR")
	t.Logf("renovate-e2e forge=%s case=second-build outcome=%s prs=%d pr=#%d digest=%s run=%q", forge, outcome, len(prs), prs[0].Number, short(second), r.Cost)
	headAfterSecond := prs[0].HeadSHA

	// b. The first build's run, launched again and finishing after the second
	// (a retried or late run). What this asserts, and why it holds: the config
	// nudgeflow writes names the image's repository and tag
	// (depNameTemplate/currentValueTemplate), never the build's digest, so
	// Renovate resolves the tag at the registry when it runs and writes the
	// digest the tag points at then, the second build's; the request's Digest
	// only labels the run. So a late run of an older build leaves the PR at the
	// newest build, as long as the registry's tag does (a tag pushed back to
	// an older image would be followed: the registry is the truth). nudgeflow's
	// own supersede logic (activities/renovate/supersede.go), which stops an
	// older run before it starts, is not what is tested here.
	n.Run, n.Digest = "first-build-late", first
	r = tn.runNudge(t, n)
	requireSucceeded(t, r)
	prs = tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "log %s", r.LogPath)
	require.Equal(t, pr.Number, prs[0].Number)
	rollback := 0
	for path, content := range bumped {
		got, _ := tn.forge.FileAt(t, tn.owner, repo, nudgeBranch, path)
		if got != strings.ReplaceAll(content, old, second) {
			rollback++
			t.Errorf("%s was rolled back by an older build's late run:\n%s", path, got)
		}
	}
	t.Logf("renovate-e2e forge=%s case=older-build-late prs=%d rollback=%d head_unchanged=%t run=%q",
		forge, len(prs), rollback, prs[0].HeadSHA == headAfterSecond, r.Cost)
	t.Logf("renovate-e2e forge=%s files_bumped=%d prs=%d rollback=%d", forge, filesBumped, len(prs), rollback)
}

// privateImageCase is case c: the nudging image is in a registry that answers
// only with credentials. Without them Renovate finds no new digest, opens
// nothing and exits 0; nudgeflow must read that run as failed. With the
// tenant's pull secret (the run's host rules) it opens the PR.
func privateImageCase(t *testing.T, tn *tenant) {
	ctx := context.Background()
	forge := tn.forge.Name()
	reg := tn.w.private
	repoTag := "ns/private-" + forge + ":v1"
	built := reg.Host + "/ns/private-" + forge
	old, err := reg.PushImage(ctx, repoTag)
	require.NoError(t, err)
	newer, err := reg.PushImage(ctx, repoTag)
	require.NoError(t, err)
	repo := "private"
	dockerfile := "FROM " + built + "@" + old + "\n"
	tn.forge.CreateRepo(t, tn.owner, repo, "main", map[string]string{"Dockerfile": dockerfile})
	tn.forge.CreateLabel(t, tn.owner, repo, renovate.NudgeLabel)
	n := nudge{Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo, Image: built + ":v1", Digest: newer}

	n.Run = "private-anonymous"
	r := tn.runNudge(t, n)
	require.True(t, r.Status.Done, "%+v", r.Status)
	require.False(t, r.Status.Succeeded, "a nudge that could not read the image is not a success: %+v, log %s", r.Status, r.LogPath)
	require.Empty(t, tn.forge.PRs(t, tn.owner, repo), "nothing was opened")
	require.Equal(t, renovaterun.ReasonRegistryAuthFailed, r.Status.Reason)
	require.Contains(t, r.Status.Message, "ServiceAccount build-pipeline-"+nudging+" in namespace "+tn.namespace,
		"the Warning Event nudgeflow records says where the pull secret goes")
	require.Contains(t, r.Log, "nudgeflow: Renovate could not authenticate to the image registry", "the run's log says why, where a person reads it")
	outcome, _, _ := outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "failed", outcome)
	t.Logf("renovate-e2e forge=%s case=private-image-without-credentials outcome=%s succeeded=%t reason=%s prs=0 run=%q",
		forge, outcome, r.Status.Succeeded, r.Status.Reason, r.Cost)

	n.Run = "private-pull-secret"
	n.HostRules = []renovate.HostRule{{MatchHost: reg.Host, Username: tn.w.privateUser, Password: tn.w.privatePassword}}
	r = tn.runNudge(t, n)
	requireSucceeded(t, r)
	require.NotContains(t, r.Log, tn.w.privatePassword, "Renovate masks the registry password in its log")
	prs := tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "log %s", r.LogPath)
	got, ok := tn.forge.FileAt(t, tn.owner, repo, prs[0].HeadRef, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, strings.ReplaceAll(dockerfile, old, newer), got)
	outcome, _, _ = outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "ok", outcome)
	t.Logf("renovate-e2e forge=%s case=private-image-with-pull-secret outcome=%s succeeded=%t prs=%d run=%q", forge, outcome, r.Status.Succeeded, len(prs), r.Cost)
}

// cancelCase is case d: a person cancels a running nudge run (spec.status
// Cancelled); Renovate is stopped and the run ends Cancelled, which nudgeflow
// reads as a cancel, not a failure to retry. The registry holds Renovate's
// lookup of the image, so the run is surely in the middle of its work when it
// is cancelled.
func cancelCase(t *testing.T, tn *tenant) {
	ctx := context.Background()
	forge := tn.forge.Name()
	repoName := "ns/slow-" + forge
	built := tn.w.registry.Host + "/" + repoName
	old, err := tn.w.registry.PushImage(ctx, repoName+":v1")
	require.NoError(t, err)
	newer, err := tn.w.registry.PushImage(ctx, repoName+":v1")
	require.NoError(t, err)
	repo := "cancelled"
	tn.forge.CreateRepo(t, tn.owner, repo, "main", map[string]string{"Dockerfile": "FROM " + built + "@" + old + "\n"})
	reached, release := tn.w.registry.Hold(repoName)
	defer release()

	n := nudge{Run: "cancelled", Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo, Image: built + ":v1", Digest: newer}
	done := tn.launch(t, n)
	defer done()
	select {
	case <-reached:
	case <-time.After(runTimeout):
		t.Fatalf("Renovate never looked the image up; log %s", tn.w.Runner.LogPath(tn.namespace, n.Run))
	}
	running, err := plrunner.WaitFor(ctx, tn.w.Client, tn.namespace, n.Run, time.Minute, func(*tektonv1.PipelineRun) bool { return true })
	require.NoError(t, err)
	require.True(t, plrunner.Running(running), "the run is running while Renovate waits on the registry: %+v", running.Status.Conditions)

	require.NoError(t, plrunner.Cancel(ctx, tn.w.Client, tn.namespace, n.Run))
	r := tn.wait(t, n.Run)
	cond := r.Run.Status.GetCondition(apis.ConditionSucceeded)
	require.Equal(t, corev1.ConditionFalse, cond.Status)
	require.Equal(t, tektonv1.PipelineRunReasonCancelled.String(), cond.Reason)
	require.True(t, r.Status.Done && r.Status.Cancelled && !r.Status.Succeeded, "nudgeflow reads a cancel: %+v", r.Status)
	require.Contains(t, r.Log, "--- step renovate killed: the run was cancelled", "log %s", r.LogPath)
	require.Empty(t, tn.forge.PRs(t, tn.owner, repo), "Renovate was stopped before it pushed anything")
	t.Logf("renovate-e2e forge=%s case=cancel reason=%s cancelled=%t prs=0", forge, cond.Reason, r.Status.Cancelled)
}

// footerSecondLine is the footer's second line as the forge shows it: Renovate's
// gitlab platform writes "MR" for "PR" in every text it posts (its
// massageMarkdown), so on GitLab build-service's footer reads "nudging MR" too.
func footerSecondLine(forge landingforge.Forge) string {
	if forge.Platform() == "gitlab" {
		return "This is Konflux nudging MR, not Mintmaker."
	}
	return "This is Konflux nudging PR, not Mintmaker."
}

func requireSucceeded(t *testing.T, r ran) {
	t.Helper()
	cond := r.Run.Status.GetCondition(apis.ConditionSucceeded)
	require.True(t, r.Status.Done && r.Status.Succeeded, "nudgeflow reads the run as succeeded: %+v (condition %+v), log %s\n%s",
		r.Status, cond, r.LogPath, tail(r.Log, 60))
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func short(digest string) string {
	if len(digest) > 19 {
		return digest[:19]
	}
	return fmt.Sprint(digest)
}
