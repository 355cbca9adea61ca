package renovate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

func at(minute int) time.Time { return time.Date(2026, 11, 1, 10, minute, 0, 0, time.UTC) }

// buildAt is a build PipelineRun of operand that started at the minute.
func buildAt(name string, minute int) *tektonv1.PipelineRun {
	start := metav1.NewTime(at(minute))
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}}
	plr.Status.StartTime = &start
	return plr
}

// otherServicesRun is a nudge run build-service or integration-service created
// for a build (no built-at annotation: its build's start is read).
func otherServicesRun(name, build, targets string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant",
		Labels:      map[string]string{LabelType: LabelTypeNudge},
		Annotations: map[string]string{konflux.AnnotationNudging: "operand", konflux.AnnotationNudged: targets, konflux.AnnotationNudgingPLR: build}}}
}

func launchAt(name, build string, minute int) renovateapi.LaunchRequest {
	req := unitRequest(name)
	req.BuildPipelineRun, req.BuiltAt = build, at(minute)
	return req
}

// An older build's launch after a newer build's run exists is refused as
// Superseded (non-retryable, naming the newer run), whoever created that run; runs
// of other edges, of the same build, or of an older build do not refuse it.
func TestOlderBuildIsNotLaunchedAfterANewerOne(t *testing.T) {
	u := newUnitWorld(t, "",
		buildAt("operand-on-push-1", 1), buildAt("operand-on-push-2", 2), buildAt("operand-on-push-3", 3),
		otherServicesRun("renovate-pipeline-other-edge", "operand-on-push-3", "tests"),
	)
	u.launch(launchAt("run-for-2", "operand-on-push-2", 2))

	_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, launchAt("run-for-1", "operand-on-push-1", 1))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, renovateapi.ErrorTypeSuperseded, appErr.Type())
	require.True(t, appErr.NonRetryable())
	var newer string
	require.NoError(t, appErr.Details(&newer))
	require.Equal(t, "run-for-2", newer)
	require.Error(t, u.kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "tenant", Name: "run-for-1"}, &tektonv1.PipelineRun{}),
		"no run for the older build")

	// Another attempt of the same build, and a newer build, are launched.
	again := launchAt("run-for-2-attempt-2", "operand-on-push-2", 2)
	again.Attempt = 2
	u.launch(again)
	u.launch(launchAt("run-for-3", "operand-on-push-3", 3))

	// build-service's run of a newer build refuses an older one as well.
	v := newUnitWorld(t, "", buildAt("operand-on-push-1", 1), buildAt("operand-on-push-2", 2),
		otherServicesRun("renovate-pipeline-1732-abcde", "operand-on-push-2", "bundle tests"))
	_, err = v.env.ExecuteActivity(v.a.LaunchRenovate, launchAt("run-for-1", "operand-on-push-1", 1))
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, renovateapi.ErrorTypeSuperseded, appErr.Type())

	// A request recorded before builds carried their start is never refused.
	old := unitRequest("run-without-start")
	old.BuildPipelineRun = "operand-on-push-0"
	v.launch(old)
}

// A newer build's run stops nudgeflow's runs of the edge for older builds that
// have not ended; their status then says superseded, not cancelled. Ended runs and
// other services' runs are left alone.
func TestNewerBuildStopsOlderRuns(t *testing.T) {
	u := newUnitWorld(t, "", buildAt("operand-on-push-0", 0), buildAt("operand-on-push-1", 1), buildAt("operand-on-push-2", 2),
		otherServicesRun("renovate-pipeline-bs", "operand-on-push-0", "bundle"))
	ctx := context.Background()
	get := func(name string) *tektonv1.PipelineRun {
		plr := &tektonv1.PipelineRun{}
		require.NoError(t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, plr))
		return plr
	}
	u.launch(launchAt("run-for-0", "operand-on-push-0", 0))
	ended := get("run-for-0")
	ended.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
	require.NoError(t, u.kube.Update(ctx, ended)) // the fake client keeps status in the object
	u.launch(launchAt("run-for-1", "operand-on-push-1", 1))

	u.launch(launchAt("run-for-2", "operand-on-push-2", 2))

	older := get("run-for-1")
	require.Equal(t, "run-for-2", older.Annotations[renovaterun.AnnotationSupersededBy])
	require.Equal(t, tektonv1.PipelineRunSpecStatusCancelled, string(older.Spec.Status))
	require.Empty(t, get("run-for-0").Annotations[renovaterun.AnnotationSupersededBy], "an ended run is left alone")
	require.Empty(t, get("renovate-pipeline-bs").Spec.Status, "another service's run is its own")
	newer := get("run-for-2")
	require.Equal(t, tektonv1.PipelineRunSpecStatusPending, string(newer.Spec.Status), "it waits until the stopped run ended: one push per branch")
	require.Equal(t, "run-for-1", newer.Annotations[renovaterun.AnnotationQueuedForBranch])

	older.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Cancelled"})
	st := renovaterun.StatusOf(older)
	require.True(t, st.Done)
	require.Equal(t, "run-for-2", st.SupersededBy)
	require.False(t, st.Cancelled, "superseded, not cancelled by a person")
}
