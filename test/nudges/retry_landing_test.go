package nudges

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// A failed Renovate run is retried as the Nudge workflow says, for real, on each
// forge: the build
// reports its digest before its tag reaches the registry (a push that lands late,
// as replication to a mirror does), so the pinned Renovate's first run cannot look
// the image up and exits 0 having opened nothing. The step reads that as
// image-lookup-failed, the workflow records RunFailed and retries after its
// backoff; by the second run the tag is there, and Renovate opens the nudge PR with
// the built digest.
func TestAFailedRenovateRunIsRetriedAndLands(t *testing.T) {
	onEveryForge(t, failedRunIsRetriedAndLands)
}

func failedRunIsRetriedAndLands(t *testing.T, reg *ociregistry.Registry, forgeName string) {
	f := newFixture(t)
	l := startLanding(f, reg, forgeName)
	builtRepo := reg.Host + "/tenant-retry-" + forgeName + "/operand"
	l.operandNudgesBundle(f, builtRepo, immediate("operand", "bundle"))

	// The image the build made, known by its digest before it is pushed.
	const seed = "operand-build-1"
	digest, err := ociregistry.SeededDigest(seed)
	require.NoError(t, err)
	imageURL := builtRepo + ":rev1"
	l.runner.BeforeRun = func(ctx context.Context, plr *tektonv1.PipelineRun) error {
		if plr.Annotations[renovate.AnnotationAttempt] != "2" {
			return nil
		}
		_, err := l.reg.PushSeeded(ctx, strings.TrimPrefix(imageURL, l.reg.Host+"/"), seed)
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
	require.Equal(t, renovaterun.ReasonImageLookupFailed, renovaterun.StatusOf(ended).Reason, "Renovate's log:\n%s", firstLog)
	require.Contains(t, firstLog, "Could not determine new digest for update", "Renovate found the repository, not the tag")
	require.Contains(t, firstLog, "nudgeflow: Renovate could not look up the nudging image")

	second := f.waitRuns(2)[1]
	require.Equal(t, "2", second.Annotations[renovate.AnnotationAttempt])
	ended, err = plrunner.WaitFor(f.ctx, f.w.Kube, f.ns, second.Name, 5*time.Minute, plrunner.Ended)
	require.NoError(t, err, "the runner ends the retried Renovate run")
	secondLog := l.log(f, second.Name)
	require.True(t, renovaterun.StatusOf(ended).Succeeded, "%+v; Renovate's log:\n%s", renovaterun.StatusOf(ended), secondLog)

	wfID := nudgeapi.WorkflowID(f.ns, string(plr.UID), "bundle")
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Equal(t, 2, res.Attempts)
	require.Equal(t, []string{nudge.ReasonRunFailed, nudge.ReasonSucceeded}, reasons(f.events("bundle")))
	require.Contains(t, f.events("bundle")[0].Message, renovaterun.ReasonImageLookupFailed)

	prs := l.forge.PRs(t, "tenant", "bundle")
	require.Len(t, prs, 1, "Renovate's log:\n%s", secondLog)
	require.True(t, strings.HasPrefix(prs[0].HeadRef, "konflux/component-updates/"), prs[0].HeadRef)
	dockerfile, ok := l.forge.FileAt(t, "tenant", "bundle", prs[0].HeadRef, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM "+builtRepo+"@"+digest+"\n", dockerfile)
	t.Logf("renovate-e2e forge=%s case=failed-run-retried attempts=%d prs=%d", forgeName, res.Attempts, len(prs))
}
