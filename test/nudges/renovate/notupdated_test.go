package renovate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
)

// With a GitHub App token Renovate makes the branch's commit through the API
// (platform-native commit). When GitHub's git data API fails, Renovate logs
// "Platform-native commit: unknown error" at DEBUG, reports the branch as
// "no-work", opens nothing and exits 0. nudgeflow reads that run as failed
// (repository-not-updated), so the Nudge retries it instead of recording a nudge
// that never landed.
func TestRenovateThatCouldNotCommitIsAFailedRun(t *testing.T) {
	w := sharedWorld(t)
	ctx := context.Background()
	oldDigest, err := w.registry.PushImage(ctx, "ns/operand-gh-nocommit:v1")
	require.NoError(t, err)
	newDigest, err := w.registry.PushImage(ctx, "ns/operand-gh-nocommit:v1")
	require.NoError(t, err)

	github := landingforge.StartGitHub(t).WithToken(landingforge.GitHubAppToken)
	emu := github.Emu
	// GitHub's git data API answers 502 to every commit it is asked to create;
	// everything else reaches the emulator.
	target, err := url.Parse(emu.URL())
	require.NoError(t, err)
	var refused atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	outage := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git/commits") {
			refused.Add(1)
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusBadGateway)
			_, _ = rw.Write([]byte(`{"message":"Server Error"}`))
			return
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(outage.Close)
	forge := &githubBehindOutage{GitHub: github, endpoint: outage.URL + "/api/v3/"}

	builtRepo := w.registry.Host + "/ns/operand-gh-nocommit"
	forge.CreateRepo(t, "tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM " + builtRepo + "@" + oldDigest + "\n"})
	forge.CreateLabel(t, "tenant", "consumer", renovate.NudgeLabel)

	tn := newTenant(t, w, forge)
	res := tn.runNudge(t, nudge{Run: "renovate-nudge-github-no-commit", Nudging: "operand", Nudged: "consumer",
		Repo: "tenant/consumer", Image: builtRepo + ":v1", Digest: newDigest})
	cond := res.Run.Status.GetCondition(apis.ConditionSucceeded)
	require.Equal(t, corev1.ConditionTrue, cond.Status, "Renovate exits 0: %+v\nlog %s", cond, res.LogPath)
	require.Positive(t, refused.Load(), "Renovate asked for the commit; log %s", res.LogPath)
	require.Contains(t, res.Log, "Platform-native commit: unknown error", "log %s", res.LogPath)
	require.Contains(t, res.Log, "nudgeflow: Renovate did not update the repository", "the step says what went wrong")
	require.Empty(t, forge.PRs(t, "tenant", "consumer"), "no pull request; log %s", res.LogPath)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeRepositoryNotUpdated)}},
		res.Run.Status.Results, "log %s", res.LogPath)
	require.True(t, res.Status.Done)
	require.False(t, res.Status.Succeeded, "nudgeflow reads the run as failed: %+v", res.Status)
	require.Equal(t, renovaterun.ReasonRepositoryNotUpdated, res.Status.Reason)
	t.Logf("renovate-e2e forge=github case=commit-refused outcome=%s reason=%s prs=0", renovaterun.OutcomeRepositoryNotUpdated, res.Status.Reason)
}

// githubBehindOutage is the GitHub forge reached through a proxy that fails some
// requests: Renovate's endpoint, and the clone URL it derives from it, are the proxy's.
type githubBehindOutage struct {
	*landingforge.GitHub
	endpoint string
}

func (g *githubBehindOutage) Endpoint() string { return g.endpoint }
