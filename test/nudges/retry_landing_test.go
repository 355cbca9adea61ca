package nudges

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// A failed Renovate run is retried as the Nudge workflow says, for real: the build
// reports its digest before its tag reaches the registry (a push that lands late,
// as replication to a mirror does), so the pinned Renovate's first run cannot look
// the image up and exits 0 having opened nothing. The step reads that as
// image-lookup-failed, the workflow records RunFailed and retries after its
// backoff; by the second run the tag is there, and Renovate opens the nudge PR with
// the built digest.
func TestAFailedRenovateRunIsRetriedAndLands(t *testing.T) {
	f := newFixture(t)
	l := startLanding(f)
	builtRepo := l.reg.Host + "/tenant/operand"
	oldDigest, err := l.reg.PushImage(f.ctx, "tenant/operand:v0")
	require.NoError(t, err)
	bundleURL := l.repo(t, "tenant", "bundle", map[string]string{
		"Dockerfile": "FROM " + builtRepo + "@" + oldDigest + "\n",
	})
	f.create(&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: builtRepo}})
	f.component("bundle", bundleURL, map[string]string{mirrorv1alpha1.AnnotationGitProvider: "forgejo"})
	f.nudgeConfig(immediate("operand", "bundle"))

	// The image the build made, known by its digest before it is pushed.
	const seed = "operand-build-1"
	digest, err := ociregistry.SeededDigest(seed)
	require.NoError(t, err)
	imageURL := builtRepo + ":rev1"
	l.runner.BeforeRun = func(ctx context.Context, plr *tektonv1.PipelineRun) error {
		if plr.Annotations[renovate.AnnotationAttempt] != "2" {
			return nil
		}
		_, err := l.reg.PushSeeded(ctx, "tenant/operand:rev1", seed)
		return err
	}

	plr := f.newBuild("operand", 1, nil, nil)
	require.NoError(t, world.SetStatus(f.ctx, f.w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: imageURL, Digest: digest,
			Started: time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC), Completed: time.Now()}.WriteStatus(plr)
	}))

	first := f.waitRuns(1)[0]
	ended, err := plrunner.WaitFor(f.ctx, f.w.Kube, f.ns, first.Name, 5*time.Minute, plrunner.Ended)
	require.NoError(t, err, "the runner ends the first Renovate run")
	firstLog := l.log(f, first.Name)
	require.Equal(t, corev1.ConditionTrue, ended.Status.GetCondition(apis.ConditionSucceeded).Status,
		"Renovate exits 0 though it found no image; its log:\n%s", firstLog)
	require.Equal(t, renovate.ReasonImageLookupFailed, renovate.StatusOf(ended).Reason, "Renovate's log:\n%s", firstLog)
	require.Contains(t, firstLog, "Could not determine new digest for update", "Renovate found the repository, not the tag")
	require.Contains(t, firstLog, "nudgeflow: Renovate could not look up the nudging image")

	second := f.waitRuns(2)[1]
	require.Equal(t, "2", second.Annotations[renovate.AnnotationAttempt])
	ended, err = plrunner.WaitFor(f.ctx, f.w.Kube, f.ns, second.Name, 5*time.Minute, plrunner.Ended)
	require.NoError(t, err, "the runner ends the retried Renovate run")
	secondLog := l.log(f, second.Name)
	require.True(t, renovate.StatusOf(ended).Succeeded, "%+v; Renovate's log:\n%s", renovate.StatusOf(ended), secondLog)

	wfID := nudge.WorkflowID(f.ns, string(plr.UID), "bundle")
	var res nudge.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudge.PhaseSucceeded, res.Phase)
	require.Equal(t, 2, res.Attempts)
	require.Equal(t, []string{nudge.ReasonRunFailed, nudge.ReasonSucceeded}, reasons(f.events("bundle")))
	require.Contains(t, f.events("bundle")[0].Message, renovate.ReasonImageLookupFailed)

	prs, err := l.forge.PRs("tenant", "bundle")
	require.NoError(t, err)
	require.Len(t, prs, 1, "Renovate's log:\n%s", secondLog)
	require.True(t, strings.HasPrefix(prs[0].Head.Ref, "konflux/component-updates/"), prs[0].Head.Ref)
	dockerfile, ok := l.forge.FileAt("tenant", "bundle", prs[0].Head.Ref, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM "+builtRepo+"@"+digest+"\n", dockerfile)
	t.Logf("renovate-e2e forge=forgejo case=failed-run-retried attempts=%d prs=%d", res.Attempts, len(prs))
}
