package renovate

import (
	"context"
	"testing"

	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const raceBranch = "github.example.com/org/bundle@main:konflux/component-updates/bundle-component-update-operand"

// edgeRunAt is nudgeflow's run of operand -> bundle for the build that started at
// the minute, on raceBranch, with spec.status status (pending: queued for queuedFor
// when that is set).
func (u *unitWorld) edgeRunAt(name string, minute int, status tektonv1.PipelineRunSpecStatus, queuedFor string) *tektonv1.PipelineRun {
	return u.branchRunAt(name, "bundle", minute, status, queuedFor)
}

// branchRunAt is edgeRunAt for operand -> nudged.
func (u *unitWorld) branchRunAt(name, nudged string, minute int, status tektonv1.PipelineRunSpecStatus, queuedFor string) *tektonv1.PipelineRun {
	u.t.Helper()
	req := launchAt(name, "operand-on-push-"+name, minute)
	req.WorkflowID = "nudge/tenant/" + name + "/" + nudged
	req.Nudged = nudged
	plr := u.a.pipelineRun(req, false, false)
	plr.Annotations[renovaterun.AnnotationBranch] = raceBranch
	plr.Spec.Status = status
	if queuedFor != "" {
		plr.Annotations[renovaterun.AnnotationQueuedForBranch] = queuedFor
	}
	require.NoError(u.t, u.kube.Create(context.Background(), plr))
	return plr
}

func (u *unitWorld) run(name string) *tektonv1.PipelineRun {
	u.t.Helper()
	plr := &tektonv1.PipelineRun{}
	require.NoError(u.t, u.kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, plr))
	return plr
}

func (u *unitWorld) end(name string, ok bool) {
	u.t.Helper()
	plr := u.run(name)
	st, reason := corev1.ConditionTrue, "Succeeded"
	if !ok {
		st, reason = corev1.ConditionFalse, tektonv1.PipelineRunReasonCancelled.String()
	}
	plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: st, Reason: reason})
	require.NoError(u.t, u.kube.Update(context.Background(), plr)) // the fake client keeps status in the object
}

// requireStoppedFor asserts a run was stopped before it started, for newer, and
// that its end reads as superseded (its Nudge ends Superseded, not retried).
func (u *unitWorld) requireStoppedFor(name, newer string) {
	u.t.Helper()
	plr := u.run(name)
	require.Equal(u.t, tektonv1.PipelineRunSpecStatusCancelled, string(plr.Spec.Status), "never released")
	require.Equal(u.t, newer, plr.Annotations[renovaterun.AnnotationSupersededBy])
	require.Empty(u.t, plr.Annotations[renovaterun.AnnotationQueuedForBranch])
	u.end(name, false)
	st := renovaterun.StatusOf(u.run(name))
	require.True(u.t, st.Done)
	require.Equal(u.t, newer, st.SupersededBy)
	require.False(u.t, st.Cancelled)
}

// The check-then-act race at launch: the older build's launch passes its check
// before the newer build's run exists, and the newer launch listed the edge's runs
// before the older run existed (so it stopped nothing). The older launch looks
// again after its own create and stops its run before it starts.
func TestOlderLaunchThatLostTheRaceStopsItsOwnRun(t *testing.T) {
	for _, kueue := range []bool{false, true} {
		t.Run(map[bool]string{false: "nudgeflow releases it", true: "Kueue would admit it"}[kueue], func(t *testing.T) {
			olderLaunchLosesTheRace(t, kueue)
		})
	}
}

// olderLaunchLosesTheRace: with kueue, tekton-kueue's webhook queued the run (its
// label), so Kueue, not nudgeflow, would start it: the launch is the last look.
func olderLaunchLosesTheRace(t *testing.T, kueue bool) {
	var u *unitWorld
	u = newInterceptedWorld(t, interceptor.Funcs{
		Create: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, opts ...ctrlclient.CreateOption) error {
			if obj.GetName() == "run-for-1" {
				if plr, ok := obj.(*tektonv1.PipelineRun); ok {
					if kueue {
						plr.Labels[LabelKueueQueue] = "nudges"
					}
					// The newer build's launch creates its run in between (and has listed already).
					req := launchAt("run-for-2", "operand-on-push-2", 2)
					req.WorkflowID = "nudge/tenant/2/bundle"
					newer := u.a.pipelineRun(req, false, false)
					newer.Annotations[renovaterun.AnnotationBranch] = raceBranch
					require.NoError(t, c.Create(ctx, newer))
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}, "", buildAt("operand-on-push-1", 1), buildAt("operand-on-push-2", 2))

	res := u.launch(launchAt("run-for-1", "operand-on-push-1", 1))
	require.True(t, res.Created)
	if !kueue {
		require.Contains(t, u.logs.String(), "stopped the Renovate run before it started")
	}
	u.requireStoppedFor("run-for-1", "run-for-2")
}

// The branch queue releases by age, but never a run a newer build of its edge
// supersedes: that one is stopped, and the next waiting run starts instead.
func TestBranchQueueNeverReleasesASupersededRun(t *testing.T) {
	u := newUnitWorld(t, "")
	ctx := context.Background()
	u.edgeRunAt("run-for-0", 0, "", "")
	u.edgeRunAt("run-for-1", 1, tektonv1.PipelineRunSpecStatusPending, "run-for-0")
	u.edgeRunAt("run-for-2", 2, tektonv1.PipelineRunSpecStatusPending, "run-for-0")

	u.end("run-for-0", true)
	next, err := renovaterun.ReleaseNextOnBranch(ctx, u.kube, "tenant", raceBranch)
	require.NoError(t, err)
	require.Equal(t, "run-for-2", next, "the newer build's run starts")
	require.Empty(t, u.run("run-for-2").Spec.Status)
	u.requireStoppedFor("run-for-1", "run-for-2")

	// Without a newer build, the oldest waiting run starts, as before.
	v := newUnitWorld(t, "")
	v.edgeRunAt("run-for-0", 0, "", "")
	v.edgeRunAt("run-for-1", 1, tektonv1.PipelineRunSpecStatusPending, "run-for-0")
	v.end("run-for-0", true)
	next, err = renovaterun.ReleaseNextOnBranch(ctx, v.kube, "tenant", raceBranch)
	require.NoError(t, err)
	require.Equal(t, "run-for-1", next)
}

// A queued run whose branch is free is not started when a newer build's run of
// its edge exists, even one that already ended: it is stopped.
func TestStartIfFreeStopsASupersededRun(t *testing.T) {
	u := newUnitWorld(t, "")
	u.edgeRunAt("run-for-2", 2, "", "")
	u.end("run-for-2", true)
	u.edgeRunAt("run-for-1", 1, tektonv1.PipelineRunSpecStatusPending, "run-for-2")

	started, err := renovaterun.StartIfFree(context.Background(), u.kube, u.run("run-for-1"))
	require.NoError(t, err)
	require.False(t, started)
	u.requireStoppedFor("run-for-1", "run-for-2")

	// A run of another edge (another target) on the same branch is no newer build of it.
	v := newUnitWorld(t, "")
	v.branchRunAt("run-other-target", "tests", 3, "", "")
	v.end("run-other-target", true)
	v.edgeRunAt("run-for-1", 1, tektonv1.PipelineRunSpecStatusPending, "gone")
	started, err = renovaterun.StartIfFree(context.Background(), v.kube, v.run("run-for-1"))
	require.NoError(t, err)
	require.True(t, started)
}

// The queue orders runs by creation, to the second, then by name; a newer build's
// run created in the same second as an older queued one may stand ahead of it,
// still undecided by its launch (no queue mark yet), and that launch listed the
// edge's runs before the older run existed, so it stops nothing. When the branch
// frees, the older queued run behind it is stopped all the same, never left
// queued to be released later over the newer digest. (The fake API server stamps
// no creationTimestamp: every run here was created "in the same second".)
func TestReleaseStopsASupersededRunBehindAnUndecidedLaunch(t *testing.T) {
	u := newUnitWorld(t, "")
	ctx := context.Background()
	u.edgeRunAt("run-for-0", 0, "", "")
	u.edgeRunAt("run-b-older", 1, tektonv1.PipelineRunSpecStatusPending, "run-for-0")
	u.edgeRunAt("run-a-newer", 2, tektonv1.PipelineRunSpecStatusPending, "") // its launch has not decided yet

	u.end("run-for-0", true)
	next, err := renovaterun.ReleaseNextOnBranch(ctx, u.kube, "tenant", raceBranch)
	require.NoError(t, err)
	require.Empty(t, next, "the undecided launch starts its own run")
	require.Equal(t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusPending), u.run("run-a-newer").Spec.Status)
	u.requireStoppedFor("run-b-older", "run-a-newer")
}

// A queued run's event stops the superseded runs queued on its branch, not only
// itself: a newer build's run queued behind an older queued one (ordered by name
// within a second) would otherwise wait for a run that is never released.
func TestStartIfFreeStopsASupersededRunAheadOfIt(t *testing.T) {
	u := newUnitWorld(t, "")
	u.edgeRunAt("run-for-0", 0, "", "")
	u.end("run-for-0", true)
	u.edgeRunAt("run-a-older", 1, tektonv1.PipelineRunSpecStatusPending, "run-for-0")
	u.edgeRunAt("run-b-newer", 2, tektonv1.PipelineRunSpecStatusPending, "run-for-0")

	started, err := renovaterun.StartIfFree(context.Background(), u.kube, u.run("run-b-newer"))
	require.NoError(t, err)
	require.False(t, started, "the stopped run holds the branch until Tekton ended it")
	require.Equal(t, tektonv1.PipelineRunSpecStatusCancelled, string(u.run("run-a-older").Spec.Status))
	u.requireStoppedFor("run-a-older", "run-b-newer") // ends it

	next, err := renovaterun.ReleaseNextOnBranch(context.Background(), u.kube, "tenant", raceBranch)
	require.NoError(t, err)
	require.Equal(t, "run-b-newer", next, "its end releases the newer build's run")
}
