package nudges

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// A cluster policy refuses the Renovate run's ConfigMap: the launch deletes the run
// it created pending, so no PipelineRun is left in the namespace, and the Nudge
// fails at once with a Warning Event on the nudged Component that names the
// policy's reason.
func TestRefusedLaunchLeavesNoRunAndSaysWhy(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil, "bundle")
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	const reason = "ConfigMaps need the platform team's approval in this namespace"
	f.w.DenyCreate(t, f.ns, &corev1.ConfigMap{}, reason)
	b := f.build("operand", 1, nil)

	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	world.Eventually(t, waitFor, "the bridge starts the Nudge", func() (bool, error) { return f.runID(wfID) != "", nil })
	var res nudgeapi.Result
	err := f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res)
	require.ErrorContains(t, err, reason, "the Nudge fails, naming the refusal")
	evs := f.events("bundle")
	require.Equal(t, []string{nudge.ReasonFailed}, reasons(evs), "one launch: a refusal is not retried")
	require.Equal(t, corev1.EventTypeWarning, evs[0].Type)
	require.Contains(t, evs[0].Message, reason)
	require.Contains(t, evs[0].Message, "deleted the pending PipelineRun "+f.ns+"/"+renovateapi.RunName(wfID, 1))
	var runs tektonv1.PipelineRunList
	require.NoError(t, f.w.Kube.List(f.ctx, &runs, ctrlclient.InNamespace(f.ns), ctrlclient.MatchingLabels{renovate.LabelType: renovate.LabelTypeNudge}))
	require.Empty(t, runs.Items, "no Renovate run is left pending")
}

// A launch that fails for a passing reason (a required webhook is unreachable when
// the Secret is created) deletes its pending run and is retried. The retry creates
// the run again, finds the ConfigMap the deleted run owned (no garbage collector
// runs in the test world) and fails again, retryably, deleting the new run: using
// that ConfigMap would lose it to the collector under the new run. Once the
// collector (here the test) has deleted it, the retry creates everything anew,
// owned by the new run, and releases it.
func TestRetriedLaunchStartsFromScratch(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := renovate.New(f.w.Kube, operatorNamespace)
	env.RegisterActivity(a)
	wfID := "nudge/" + f.ns + "/build-uid/bundle"
	req := renovateapi.LaunchRequest{Namespace: f.ns, Name: renovateapi.RunName(wfID, 1), WorkflowID: wfID, Attempt: 1, Nudging: "operand", Nudged: "bundle", Build: imagebuild.Build{ImageURL: "quay.io/org/operand:rev1", Digest: digestOf(1), BuildPipelineRun: "operand-on-push-1", RepoAtSHA: "https://github.com/org/operand?rev=" + strings.Repeat("a", 40)}}
	key := ctrlclient.ObjectKey{Namespace: f.ns, Name: req.Name}
	runGone := func() {
		t.Helper()
		err := f.w.Kube.Get(f.ctx, key, &tektonv1.PipelineRun{})
		require.True(t, apierrors.IsNotFound(err), "the pending run is deleted: %v", err)
	}
	retryable := func(err error, parts ...string) {
		t.Helper()
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.False(t, appErr.NonRetryable(), "retried: %v", err)
		for _, p := range parts {
			require.ErrorContains(t, err, p)
		}
	}

	restore := f.w.FailCreate(t, f.ns, &corev1.Secret{})
	_, err := env.ExecuteActivity(a.LaunchRenovate, req)
	retryable(err, "deleted the pending PipelineRun", "creating Secret", "failed calling webhook")
	runGone()
	var leftover corev1.ConfigMap
	require.NoError(t, f.w.Kube.Get(f.ctx, key, &leftover))
	deletedUID := leftover.OwnerReferences[0].UID

	restore()
	_, err = env.ExecuteActivity(a.LaunchRenovate, req)
	retryable(err, "deleted the pending PipelineRun", "left over from a deleted run", string(deletedUID))
	runGone()

	// The garbage collector deletes what the deleted run owned.
	require.NoError(t, f.w.Kube.Delete(f.ctx, &leftover))
	v, err := env.ExecuteActivity(a.LaunchRenovate, req)
	require.NoError(t, err)
	var res renovateapi.LaunchResult
	require.NoError(t, v.Get(&res))
	require.True(t, res.Created)
	var run tektonv1.PipelineRun
	require.NoError(t, f.w.Kube.Get(f.ctx, key, &run))
	require.False(t, run.IsPending(), "released")
	for _, obj := range []ctrlclient.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		require.NoError(t, f.w.Kube.Get(f.ctx, key, obj))
		require.Equal(t, run.UID, obj.GetOwnerReferences()[0].UID, "%T is the new run's", obj)
	}
}
