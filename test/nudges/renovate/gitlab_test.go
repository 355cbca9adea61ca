package renovate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
)

// hookSink records the webhooks a forge sends: X-Gitlab-Event and the payload.
type hookSink struct {
	mu   sync.Mutex
	got  []hookDelivery
	srv  *httptest.Server
	want string // X-Gitlab-Token
}

type hookDelivery struct {
	Event   string
	Payload map[string]any
}

func newHookSink(t *testing.T, token string) *hookSink {
	h := &hookSink{want: token}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Gitlab-Token") != h.want {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		h.mu.Lock()
		h.got = append(h.got, hookDelivery{Event: r.Header.Get("X-Gitlab-Event"), Payload: p})
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookSink) deliveries() []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.got...)
}

// TestRenovateOpensTheNudgeMROnGitLab is the contract test of the Renovate
// PipelineRun on the GitLab path: the run nudgeflow's activity code writes, run by
// the runner with the real Renovate (platform gitlab) against the GitLab emulator
// — its REST v4 API and real git at the project's clone URL — and a real registry
// over TLS, opens the nudge merge request with the built digest, and the push
// Renovate made over git is what the API and the webhooks show.
func TestRenovateOpensTheNudgeMROnGitLab(t *testing.T) {
	w := sharedWorld(t)
	ctx := context.Background()
	oldDigest, err := w.registry.PushImage(ctx, "ns/operand-gl:v1")
	require.NoError(t, err)
	newDigest, err := w.registry.PushImage(ctx, "ns/operand-gl:v1") // the build being nudged
	require.NoError(t, err)

	forge := landingforge.StartGitLab(t)
	emu := forge.Emu
	sink := newHookSink(t, "hook-secret")
	emu.AddWebhookFor(sink.srv.URL, "hook-secret", glemu.PushEvents, glemu.MergeRequestEvents)
	builtRepo := w.registry.Host + "/ns/operand-gl"
	files := map[string]string{
		"Dockerfile": "FROM " + builtRepo + "@" + oldDigest + "\n",
		"README.md":  "outside fileMatch: " + builtRepo + "@" + oldDigest + "\n",
	}
	forge.CreateRepo(t, "tenant", "consumer", "main", files)
	// As a Konflux tenant does (on GitLab a missing label would be created anyway).
	forge.CreateLabel(t, "tenant", "consumer", renovate.NudgeLabel)
	mainBefore, ok := emu.Head("tenant", "consumer", "main")
	require.True(t, ok)

	// The PipelineRun, its config and Secret exactly as nudgeflow's activity writes them.
	tn := newTenant(t, w, forge)
	res := tn.runNudge(t, nudge{Run: "renovate-nudge-gitlab-contract-1", Nudging: "operand", Nudged: "consumer",
		Repo: "tenant/consumer", Image: builtRepo + ":v1", Digest: newDigest})
	logPath := res.LogPath
	got := res.Run
	cond := got.Status.GetCondition(apis.ConditionSucceeded)
	require.Equal(t, corev1.ConditionTrue, cond.Status, "%+v\nlog %s", cond, logPath)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeOK)}},
		got.Status.Results)
	require.True(t, res.Status.Done && res.Status.Succeeded, "nudgeflow reads the run as succeeded: %+v", res.Status)
	require.NotContains(t, res.Log, "ERROR:", "Renovate logged no error; log %s", logPath)

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
	require.Equal(t, []string{renovate.NudgeLabel}, emu.Labels("tenant", "consumer"), "no label was created besides the tenant's")
	// build-service's header and footer; Renovate's gitlab platform writes "MR" for "PR".
	require.True(t, strings.HasPrefix(pr.Body, "Image created from '"+repoAtSHA("operand")+"'"), pr.Body)
	require.Contains(t, pr.Body, "To execute skipped test pipelines write comment `/ok-to-test`\nThis is Konflux nudging MR, not Mintmaker.")

	// The branch came over git: one commit by the bot's git author on main, the
	// merge request's head is the branch's, and the push showed as GitLab shows one.
	head, ok := emu.Head("tenant", "consumer", pr.HeadRef)
	require.True(t, ok)
	require.Equal(t, head.SHA, pr.HeadSHA)
	require.Equal(t, []string{mainBefore.SHA}, head.Parents)
	require.Equal(t, landingforge.GitLabBot.Email, head.AuthorEmail)
	mainAfter, _ := emu.Head("tenant", "consumer", "main")
	require.Equal(t, mainBefore.SHA, mainAfter.SHA, "main is untouched")
	require.Eventually(t, func() bool {
		var push, open bool
		for _, d := range sink.deliveries() {
			switch {
			case d.Event == "Push Hook" && d.Payload["ref"] == "refs/heads/"+pr.HeadRef && d.Payload["after"] == head.SHA:
				push = d.Payload["before"] == "0000000000000000000000000000000000000000"
			case d.Event == "Merge Request Hook":
				attrs, _ := d.Payload["object_attributes"].(map[string]any)
				open = open || attrs["action"] == "open"
			}
		}
		return push && open
	}, 10*time.Second, 20*time.Millisecond, "a Push Hook for the new branch and a Merge Request Hook (open): %+v", sink.deliveries())

	// What Renovate called, by route (the package comment of forgeemu/gitlab lists it).
	var routes []string
	for _, call := range emu.Calls() {
		if r := call.Method + " " + call.Route; !slices.Contains(routes, r) {
			routes = append(routes, r)
		}
	}
	t.Logf("renovate called: %s", strings.Join(routes, ", "))
	t.Logf("renovate run: %s", res.Cost)
	t.Logf("nudge MR !%d %q from %s", pr.Number, pr.Title, pr.HeadRef)
	filesBumped := 0
	for path, before := range files {
		if after, _ := forge.FileAt(t, "tenant", "consumer", pr.HeadRef, path); after != before {
			filesBumped++
		}
	}
	require.Equal(t, 1, filesBumped)
	t.Logf("renovate-e2e forge=gitlab files_bumped=%d prs=%d rollback=0", filesBumped, len(prs))
}
