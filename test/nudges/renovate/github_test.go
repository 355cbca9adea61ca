package renovate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
)

// githubHookSink accepts GitHub's webhooks that carry a valid X-Hub-Signature-256
// and remembers, of a pull_request event, its action and head SHA; of a push, the
// ref, whether it was created, and the new SHA.
type githubHookSink struct {
	srv    *httptest.Server
	events chan githubHook
}

type githubHook struct{ Event, Action, SHA string }

func newGitHubHookSink(t *testing.T, secret string) *githubHookSink {
	h := &githubHookSink{events: make(chan githubHook, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Hub-Signature-256") != githubemu.Sign(secret, body) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p struct {
			Action      string `json:"action"`
			PullRequest struct {
				Head struct{ SHA string } `json:"head"`
			} `json:"pull_request"`
			Ref, After string
			Created    bool
		}
		_ = json.Unmarshal(body, &p)
		hook := githubHook{Event: r.Header.Get("X-GitHub-Event"), Action: p.Action, SHA: p.PullRequest.Head.SHA}
		if hook.Event == githubemu.EventPush {
			hook.Action, hook.SHA = p.Ref, p.After
			if p.Created {
				hook.Action += " created"
			}
		}
		h.events <- hook
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// TestRenovateOpensTheNudgePROnGitHub is the contract test of the Renovate
// PipelineRun on the GitHub path: the run nudgeflow's activity code writes, run by
// the runner with the real Renovate (platform github) against the GitHub emulator —
// its REST and GraphQL APIs and real git at the repository's clone URL — and a
// real registry over TLS, opens the nudge pull request with the built digest; the
// branch Renovate pushed over git is what the API and the webhooks show.
func TestRenovateOpensTheNudgePROnGitHub(t *testing.T) {
	for _, tc := range []struct{ name, token, suffix string }{
		{"personal access token: Renovate pushes the branch over git", landingforge.GitHubBotToken, "-pat"},
		{"GitHub App token: Renovate commits through the API", landingforge.GitHubAppToken, "-app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			renovateOpensTheNudgePROnGitHub(t, tc.token, tc.suffix)
		})
	}
}

func renovateOpensTheNudgePROnGitHub(t *testing.T, token, suffix string) {
	w := sharedWorld(t)
	ctx := context.Background()
	oldDigest, err := w.registry.PushImage(ctx, "ns/operand-gh"+suffix+":v1")
	require.NoError(t, err)
	newDigest, err := w.registry.PushImage(ctx, "ns/operand-gh"+suffix+":v1") // the build being nudged
	require.NoError(t, err)

	forge := landingforge.StartGitHub(t).WithToken(token)
	emu := forge.Emu
	sink := newGitHubHookSink(t, "hook-secret")
	emu.AddWebhookFor(sink.srv.URL, "hook-secret", githubemu.EventPush, githubemu.EventPullRequest)
	builtRepo := w.registry.Host + "/ns/operand-gh" + suffix
	files := map[string]string{
		"Dockerfile": "FROM " + builtRepo + "@" + oldDigest + "\n",
		"README.md":  "outside fileMatch: " + builtRepo + "@" + oldDigest + "\n",
	}
	forge.CreateRepo(t, "tenant", "consumer", "main", files)
	// Renovate applies the labels of its config; a Konflux tenant creates them.
	forge.CreateLabel(t, "tenant", "consumer", renovate.NudgeLabel)
	if token == landingforge.GitHubAppToken {
		// The App token nudgeflow mints: this repository alone, its permissions
		// alone, held to them as GitHub holds an installation token (a call
		// Renovate makes beyond them fails here).
		emu.LimitToken(token, []string{"tenant/consumer"}, ghforge.TokenPermissionMap())
	}
	mainBefore, ok := emu.Head("tenant", "consumer", "main")
	require.True(t, ok)

	// The PipelineRun, its config and Secret exactly as nudgeflow's activity writes them.
	tn := newTenant(t, w, forge)
	res := tn.runNudge(t, nudge{Run: "renovate-nudge-github-contract-" + suffix[1:], Nudging: "operand", Nudged: "consumer",
		Repo: "tenant/consumer", Image: builtRepo + ":v1", Digest: newDigest})
	logPath, logText := res.LogPath, res.Log
	got := res.Run
	cond := got.Status.GetCondition(apis.ConditionSucceeded)
	require.Equal(t, corev1.ConditionTrue, cond.Status, "%+v\nlog %s", cond, logPath)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeOK)}},
		got.Status.Results)
	require.True(t, res.Status.Done && res.Status.Succeeded, "nudgeflow reads the run as succeeded: %+v", res.Status)
	require.NotContains(t, logText, "ERROR:", "Renovate logged no error; log %s", logPath)
	require.NotContains(t, logText, "repoProblems", "Renovate met no problem in the repository; log %s", logPath)

	prs := forge.PRs(t, "tenant", "consumer")
	require.Len(t, prs, 1, "log %s", logPath)
	pr := prs[0]
	require.Equal(t, renovate.BranchPrefix+"consumer-component-update-operand", pr.HeadRef)
	require.Equal(t, "Update operand to "+strings.TrimPrefix(newDigest, "sha256:")[:7], pr.Title)
	dockerfile, ok := forge.FileAt(t, "tenant", "consumer", pr.HeadRef, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM "+builtRepo+"@"+newDigest+"\n", dockerfile)
	readme, ok := forge.FileAt(t, "tenant", "consumer", pr.HeadRef, "README.md")
	require.True(t, ok)
	require.Contains(t, readme, oldDigest, "a file outside fileMatch is untouched")
	require.Equal(t, []string{renovate.NudgeLabel}, pr.Labels, "the nudge label is applied")
	// build-service's header and footer.
	require.True(t, strings.HasPrefix(pr.Body, "Image created from '"+repoAtSHA("operand")+"'"), pr.Body)
	require.Contains(t, pr.Body, "To execute skipped test pipelines write comment `/ok-to-test`\nThis is Konflux nudging PR, not Mintmaker.")

	// The branch came over git: one commit by the bot's git author on main, the pull
	// request's head is the branch's, and GitHub's webhooks said so.
	head, ok := emu.Head("tenant", "consumer", pr.HeadRef)
	require.True(t, ok)
	require.Equal(t, head.SHA, pr.HeadSHA)
	require.Equal(t, []string{mainBefore.SHA}, head.Parents)
	require.Equal(t, landingforge.GitHubBot.Email, head.AuthorEmail)
	mainAfter, _ := emu.Head("tenant", "consumer", "main")
	require.Equal(t, mainBefore.SHA, mainAfter.SHA, "main is untouched")
	var hooks []githubHook
	require.Eventually(t, func() bool {
		for {
			select {
			case h := <-sink.events:
				hooks = append(hooks, h)
			default:
				return slices.Contains(hooks, githubHook{"push", "refs/heads/" + pr.HeadRef + " created", head.SHA}) &&
					slices.Contains(hooks, githubHook{"pull_request", "opened", head.SHA}) &&
					slices.Contains(hooks, githubHook{"pull_request", "labeled", head.SHA})
			}
		}
	}, 10*time.Second, 20*time.Millisecond, "push (branch created), pull_request opened and labeled for the pushed head: %+v", hooks)

	// What Renovate called (the package comment of forgeemu/github lists it).
	var calls []string
	number := regexp.MustCompile(`/\d+(/|$)`)
	for _, r := range emu.Requests() {
		if r = number.ReplaceAllString(r, "/{number}$1"); !slices.Contains(calls, r) {
			calls = append(calls, r)
		}
	}
	t.Logf("renovate called:\n  %s", strings.Join(calls, "\n  "))
	t.Logf("renovate run: %s", res.Cost)
	t.Logf("nudge PR #%d %q from %s", pr.Number, pr.Title, pr.HeadRef)
	filesBumped := 0
	for path, before := range files {
		if after, _ := forge.FileAt(t, "tenant", "consumer", pr.HeadRef, path); after != before {
			filesBumped++
		}
	}
	require.Equal(t, 1, filesBumped)
	t.Logf("renovate-e2e forge=github files_bumped=%d prs=%d rollback=0 token=%s", filesBumped, len(prs), suffix[1:])
}
