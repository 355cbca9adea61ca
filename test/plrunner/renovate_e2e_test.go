package plrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
)

// TestRenovatePipelineRunOpensTheNudgePROnForgejo is the contract test of the
// Renovate PipelineRun on the Forgejo path: the run nudgeflow's activity code
// writes, run by the runner with the real Renovate against the real Gitea and a
// real registry over TLS, opens the nudge PR with the built digest.
func TestRenovatePipelineRunOpensTheNudgePROnForgejo(t *testing.T) {
	renovateBin := os.Getenv("RENOVATE")
	require.NotEmpty(t, renovateBin, "set RENOVATE=$(hack/tools.sh path renovate)")
	require.NotEmpty(t, os.Getenv("GITEA"), "set GITEA=$(hack/tools.sh path gitea)")
	ctx := context.Background()

	ca, err := ociregistry.NewCA()
	require.NoError(t, err)
	cert, err := ca.ServingCert("127.0.0.1")
	require.NoError(t, err)
	reg, err := ociregistry.Start("127.0.0.1:0", cert, ca.Pool())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Close()) })
	oldDigest, err := reg.PushImage(ctx, "ns/operand:v1")
	require.NoError(t, err)
	newDigest, err := reg.PushImage(ctx, "ns/operand:v1") // the build being nudged
	require.NoError(t, err)

	forge, err := localenv.StartForgejo(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, forge.Stop()) })
	builtRepo := reg.Host + "/ns/operand"
	require.NoError(t, forge.CreateRepo("tenant", "consumer", "main", map[string]string{
		"Dockerfile": "FROM " + builtRepo + "@" + oldDigest + "\n",
		"README.md":  "outside fileMatch: " + builtRepo + "@" + oldDigest + "\n",
	}))
	// Renovate applies only labels the repository has (a Konflux tenant creates them).
	require.NoError(t, forge.API(http.MethodPost, "/repos/tenant/consumer/labels", forge.AdminToken,
		map[string]string{"name": renovate.NudgeLabel, "color": "#00aabb"}, nil))

	// The PipelineRun, its config and Secret exactly as nudgeflow's activity writes them.
	req := renovate.LaunchRequest{Namespace: "tenant", Name: "renovate-nudge-e2e-1", WorkflowID: "nudge-e2e", Attempt: 1,
		Nudging: "operand", Nudged: "consumer", ImageURL: builtRepo + ":v1", Digest: newDigest, BuildPipelineRun: "operand-build-1"}
	plr, objs := renovate.PipelineRunFor(&renovate.Activities{}, req, false, true)
	cfg := renovate.GenerateConfig(renovate.ConfigInput{
		// Platform and endpoint as nudgeflow writes them for a Forgejo/Gitea repo, except below.
		Platform: "forgejo", Endpoint: forge.URL + "/api/v1/", Username: localenv.ForgejoBot,
		GitAuthor: localenv.ForgejoBot + " <" + forge.BotEmail + ">", Repository: "tenant/consumer", BaseBranch: "main",
		Nudging: "operand", Nudged: "consumer", BuiltRepo: builtRepo, BuiltTag: "v1",
		FileMatch: renovate.FileMatch(renovate.Options{}, ""),
	})
	// Renovate 39.264 (the pinned version) has no "forgejo" platform (added in the
	// 41.x line): it exits 1 "Platform \"forgejo\" not found". Its gitea platform
	// serves Forgejo and Gitea alike.
	cfg.Platform = "gitea"
	cfgJSON, err := json.Marshal(cfg)
	require.NoError(t, err)

	c, state := startRunner(t, filepath.Dir(renovateBin))
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objs.ConfigMap, Namespace: "tenant"},
		Data: map[string]string{objs.ConfigKey: string(cfgJSON)}}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: objs.Secret, Namespace: "tenant"},
		StringData: map[string]string{objs.TokenKey: forge.BotToken}}))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objs.CAConfigMap, Namespace: "tenant"},
		Data: map[string]string{renovate.CABundleKey: string(ca.PEM)}}))
	require.NoError(t, c.Create(ctx, plr))
	setSpecStatus(t, c, "tenant", req.Name, "") // nudgeflow releases the held run

	require.Eventually(t, func() bool {
		cond := succeeded(t, c, "tenant", req.Name)
		return cond != nil && cond.Status != corev1.ConditionUnknown
	}, 5*time.Minute, 200*time.Millisecond)
	got := getRun(t, c, "tenant", req.Name)
	logPath := filepath.Join(state, "runs", "tenant", req.Name+".log")
	logText, _ := os.ReadFile(logPath)
	cond := got.Status.GetCondition(apis.ConditionSucceeded)
	require.Equal(t, corev1.ConditionTrue, cond.Status, "%+v\nlog %s", cond, logPath)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovate.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovate.OutcomeOK)}},
		got.Status.Results)
	st := renovate.StatusOf(got)
	require.True(t, st.Done && st.Succeeded, "nudgeflow reads the run as succeeded: %+v", st)

	prs, err := forge.PRs("tenant", "consumer")
	require.NoError(t, err)
	require.Len(t, prs, 1, "log %s", logPath)
	pr := prs[0]
	require.True(t, strings.HasPrefix(pr.Head.Ref, "konflux/component-updates/"), pr.Head.Ref)
	dockerfile, ok := forge.FileAt("tenant", "consumer", pr.Head.Ref, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM "+builtRepo+"@"+newDigest+"\n", dockerfile)
	readme, ok := forge.FileAt("tenant", "consumer", pr.Head.Ref, "README.md")
	require.True(t, ok)
	require.Contains(t, readme, oldDigest, "a file outside fileMatch is untouched")
	var labels []struct{ Name string }
	require.NoError(t, forge.API(http.MethodGet, fmt.Sprintf("/repos/tenant/consumer/issues/%d/labels", pr.Number), forge.AdminToken, nil, &labels))
	require.Contains(t, labels, struct{ Name string }{renovate.NudgeLabel}, "the nudge label the tenant created is applied")
	t.Logf("nudge PR #%d %q from %s", pr.Number, pr.Title, pr.Head.Ref)
	filesBumped := 1

	if m := regexp.MustCompile(`--- step renovate exited 0: (.*)`).FindSubmatch(logText); m != nil {
		t.Logf("renovate run: %s", m[1])
	}
	t.Logf("renovate-e2e forge=forgejo files_bumped=%d prs=%d rollback=0", filesBumped, len(prs))
}
