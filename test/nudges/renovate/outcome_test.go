package renovate_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	forgejoforge "github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	glforge "github.com/nudgeflow/nudgeflow/internal/forge/gitlab"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
)

// TestRenovateOutcomeContract runs the real Renovate where its log and the forge
// disagree, on the GitHub and GitLab emulators (each its own, so a fault armed
// on it meets only its case's requests), and decides each run's outcome as the
// Nudge workflow does: the step's reading of Renovate's JSON log, then the
// forge's state (renovate.ForgeDelivery, RunStatus.WithDelivery).
func TestRenovateOutcomeContract(t *testing.T) {
	w := sharedWorld(t)
	for _, f := range []struct {
		name  string
		start func(t *testing.T) (landingforge.Forge, refuser)
	}{
		{"github", func(t *testing.T) (landingforge.Forge, refuser) {
			g := landingforge.StartGitHub(t)
			return g, func() { g.Emu.FailNextWrite("/pulls", 1, http.StatusBadGateway) }
		}},
		{"gitlab", func(t *testing.T) (landingforge.Forge, refuser) {
			g := landingforge.StartGitLab(t)
			return g, func() { g.Emu.FailNextWrite("/merge_requests", 1, http.StatusBadGateway) }
		}},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fg, refuse := f.start(t)
			tn := newTenant(t, w, fg)
			t.Run("pr-creation-refused", func(t *testing.T) { prCreationRefusedCase(t, tn, refuse) })
			t.Run("commit-message-quotes-error", func(t *testing.T) { commitMessageQuotesErrorCase(t, tn) })
		})
	}
}

// refuser arms the forge to refuse the next pull (merge) request creation once,
// with a 502.
type refuser func()

// outcomeOf decides a run as the Nudge workflow does: a run a newer build
// superseded is "superseded"; a run that exited 0 is what the forge shows; "ok"
// when delivered, else "failed".
func outcomeOf(t *testing.T, tn *tenant, repo string, r ran, n nudge) (string, renovaterun.RunStatus, renovaterun.DeliveryVerdict) {
	t.Helper()
	st := r.Status
	if st.SupersededBy != "" && !st.Succeeded {
		// The workflow asks no forge then: the Nudge ends Superseded, not retried.
		return "superseded", st, renovaterun.DeliveryVerdict{}
	}
	if !st.ExitedZero {
		return "failed", st, renovaterun.DeliveryVerdict{}
	}
	builtRepo, _, _ := cutLast(n.Image, ":")
	v, err := renovate.ForgeDelivery(context.Background(), forgeClient(t, tn, repo), renovate.DeliveryInput{
		Base: "main", Branch: nudgeBranchOf(n), Digest: n.Digest,
		FileMatch: renovate.FileMatch(renovate.Options{}, ""), Repos: append([]string{builtRepo}, n.DistributionRepos...)})
	require.NoError(t, err, "ask the forge")
	st = st.WithDelivery(v)
	if st.Succeeded {
		return "ok", st, v
	}
	return "failed", st, v
}

// nudgeBranchOf is the branch Renovate pushes for n.
func nudgeBranchOf(n nudge) string {
	return renovate.BranchPrefix + n.Nudged + "-component-update-" + n.Nudging
}

// forgeClient is nudgeflow's reading client of owner/repo on the tenant's forge,
// with the bot's token (what CheckDelivery builds from the run's credential).
func forgeClient(t *testing.T, tn *tenant, repo string) forge.Forge {
	t.Helper()
	r, err := forge.ParseRepoURL(tn.forge.RepoURL(tn.owner, repo))
	require.NoError(t, err)
	o := forge.ClientOptions{Repo: r, Token: tn.forge.Token(), Bot: forge.Signature{Name: "A Developer", Email: "dev@example.com"}}
	var f forge.Forge
	switch tn.forge.Platform() {
	case "github":
		f, err = ghforge.New(o)
	case "gitlab":
		f, err = glforge.New(context.Background(), o)
	case "forgejo":
		f, err = forgejoforge.New(o)
	default:
		t.Fatalf("no client for %s", tn.forge.Platform())
	}
	require.NoError(t, err)
	return f
}

// outcomeCase pushes two builds of an image of its own (the one the repository
// refers to, then the one nudged) and makes repo, whose Dockerfile references the
// first; it returns the nudge of the second build.
func (tn *tenant) outcomeCase(t *testing.T, repo, run string) nudge {
	t.Helper()
	ctx := context.Background()
	image := tn.w.registry.Host + "/ns/operand-" + repo + "-" + tn.forge.Name() + ":v1"
	old, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/"))
	require.NoError(t, err)
	built, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/"))
	require.NoError(t, err)
	builtRepo, _, _ := cutLast(image, ":")
	tn.forge.CreateRepo(t, tn.owner, repo, "main", map[string]string{"Dockerfile": "FROM " + builtRepo + "@" + old + "\nRUN true\n"})
	tn.forge.CreateLabel(t, tn.owner, repo, renovate.NudgeLabel)
	return nudge{Run: run, Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo, Image: image, Digest: built}
}

// The forge refuses the pull request once (a 502): Renovate 39 has pushed the
// branch, logs "Pull request creation error" and "Deleting branch due to server
// error", and exits 0. The run failed: the step reads pr-not-opened in the JSON
// log and the forge shows the digest nowhere. Run again (the Nudge's retry), it
// lands in a pull request.
func prCreationRefusedCase(t *testing.T, tn *tenant, refuse refuser) {
	f := tn.forge.Name()
	repo := "pr-refused"
	n := tn.outcomeCase(t, repo, "pr-refused-1")

	refuse()
	r := tn.runNudge(t, n)
	cond := r.Run.Status.GetCondition(apis.ConditionSucceeded)
	require.Equal(t, corev1.ConditionTrue, cond.Status, "Renovate exits 0: %+v; log %s", cond, r.LogPath)
	require.Contains(t, r.Log, "Pull request creation error", "log %s", r.LogPath)
	require.Equal(t, renovaterun.ReasonPRNotOpened, r.Status.Reason, "the step read Renovate's JSON log; log %s", r.LogPath)
	require.Contains(t, r.Log, "nudgeflow: Renovate pushed its branch but opened no pull request")
	require.Empty(t, tn.forge.PRs(t, tn.owner, repo), "no pull request; log %s", r.LogPath)
	outcome, st, v := outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "failed", outcome, "%+v %+v", st, v)
	require.False(t, v.Delivered, "the forge shows the digest nowhere: %+v", v)
	t.Logf("renovate-e2e forge=%s case=pr-creation-refused outcome=%s reason=%s forge=%q", f, outcome, st.Reason, v.Message)

	// The retry: the forge accepts now, and the digest is in the pull request.
	n.Run = "pr-refused-2"
	r = tn.runNudge(t, n)
	outcome, st, v = outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "ok", outcome, "%+v %+v; log %s", st, v, r.LogPath)
	require.Equal(t, renovaterun.DeliveredInPullRequest, v.Where)
	prs := tn.forge.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1)
	require.Equal(t, prs[0].Number, v.PR)
	t.Logf("renovate-e2e forge=%s case=pr-creation-refused-retried outcome=%s where=%s pr=#%d", f, outcome, v.Where, v.PR)
}

// The base branch's latest commit is titled "fix: Error updating branch", which
// Renovate logs at debug (lib/util/git "latest repository commit"). The step
// compares each JSON record's msg, not the log's text, so the run is ok, and the
// forge shows the digest in the pull request.
func commitMessageQuotesErrorCase(t *testing.T, tn *tenant) {
	ctx := context.Background()
	f := tn.forge.Name()
	repo := "quotes-error"
	n := tn.outcomeCase(t, repo, "quotes-error-1")
	// A developer's commit on main whose title quotes a line Renovate logs on failure.
	fc := forgeClient(t, tn, repo)
	head, ok, err := fc.BranchHead(ctx, "main")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = fc.Push(ctx, forge.Push{Branch: "main", Parent: head, Base: "main", Files: map[string][]byte{"NOTES.md": []byte("notes\n")},
		New: []string{"NOTES.md"}, Message: "fix: Error updating branch", Exists: true, ExpectedHead: head.SHA})
	require.NoError(t, err)

	r := tn.runNudge(t, n)
	require.Contains(t, r.Log, "fix: Error updating branch", "Renovate logs the base branch's latest commit message; log %s", r.LogPath)
	require.True(t, r.Status.Succeeded, "the step reads no failure: %+v; log %s", r.Status, r.LogPath)
	outcome, st, v := outcomeOf(t, tn, repo, r, n)
	require.Equal(t, "ok", outcome, "%+v %+v", st, v)
	require.Equal(t, renovaterun.DeliveredInPullRequest, v.Where)
	t.Logf("renovate-e2e forge=%s case=commit-message-quotes-error outcome=%s where=%s pr=#%d", f, outcome, v.Where, v.PR)
}
