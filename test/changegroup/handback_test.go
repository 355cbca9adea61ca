package changegroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The hand-back of a build whose own Nudge the group held or races, and an
// override set at creation, against the real servers: nothing lost.

// nudgeable says the bundle's forge, as a Component on a self-hosted forge does:
// Renovate tells the forge by host, and 127.0.0.1 names none. Without it every
// Renovate launch is refused (NotNudgeable).
func (s *scenario) nudgeable() {
	s.t.Helper()
	var bundle mirrorv1alpha1.Component
	require.NoError(s.t, s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: "bundle"}, &bundle))
	bundle.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}
	require.NoError(s.t, s.w.Kube.Update(context.Background(), &bundle))
}

// The build's own Nudge ended HeldByChangeGroup (its Renovate run was held by
// the group), which burns its workflow ID; when the group is cancelled, the
// hand-back must still launch a Renovate run for the build, one that is not held.
func TestHandBackAfterHeldNudge(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	s.nudgeable()
	s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	s.explainOnFailure("g")
	build := s.buildRun("operand-a", digestOf("operand-a", 1), time.Now())
	id, run := s.startOwnNudge(build, digestOf("operand-a", 1), taskQueue)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res nudgeapi.Result
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, nudgeapi.PhaseHeldByChangeGroup, res.Phase, res.Reason)
	s.waitFor("g", "the group has the build", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })

	s.annotate("g", "cancel=hand back")
	s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
	var handedBack tektonv1.PipelineRun
	world.Eventually(t, 60*time.Second, "the handed-back build has a Renovate run that is not held", func() (bool, error) {
		runs := s.renovateRuns()
		for _, r := range runs {
			if r.Spec.Status != tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled) && r.Annotations[konflux.AnnotationHeldBy] == "" {
				handedBack = r
				return true, nil
			}
		}
		return false, fmt.Errorf("%d Renovate run(s), all held", len(runs))
	})
	require.NotEqual(t, renovateapi.RunName(id, 1), handedBack.Name, "a new Nudge carries the hand-back")
	// The group wrote Cancelled after its hand-back completed: one nudge, not two.
	require.Len(t, s.renovateRuns(), 2, "the held run and the hand-back's run, nothing more")
}

// End to end: a ChangeGroup applied with an override already set (GitOps) has
// it applied: a cancel at creation cancels the group, and the annotation is cleared
// only then. Here the update usually reaches the workflow after it resolved its
// components; the update racing the resolution is proven by the workflow package's
// TestOverrideAtCreationIsApplied, which sends it during the resolve activity.
func TestOverrideAtCreationIsAppliedEndToEnd(t *testing.T) {
	s := newScenario(t, three...)
	cg := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: s.ns, Annotations: map[string]string{konflux.AnnotationAction: "cancel=applied from Git"}},
		Spec:       appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle"},
	}
	for _, m := range three {
		cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: m})
	}
	require.NoError(t, s.w.Kube.Create(context.Background(), cg))
	s.explainOnFailure("g")
	got := s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
	require.Contains(t, got.Status.Conditions[0].Message, "applied from Git")
	world.Eventually(t, 30*time.Second, "the applied override is cleared", func() (bool, error) {
		_, ok := s.group("g").Annotations[konflux.AnnotationAction]
		return !ok, nil
	})
}

// The race: the group takes the build and ends (here: is cancelled) before the
// build's own Nudge has closed. That Nudge is still running when the hand-back
// starts, so its ID is not free yet, and it is bound to end HeldByChangeGroup
// (the bridge delivered its run's build to the group): the hand-back must not take
// the running Nudge for the build's nudge. Here the own Nudge stays running for
// good (its task queue has no worker), as a slow or restarting worker leaves it for
// a while; its held run is written as nudgeflow's launch writes it.
func TestHandBackWhileTheHeldNudgeIsStillRunning(t *testing.T) {
	s, build, id := groupWithRunningOwnNudge(t)
	ctx := context.Background()
	held := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: renovateapi.RunName(id, 1), Namespace: s.ns,
			Labels: map[string]string{renovate.LabelType: renovate.LabelTypeNudge, renovate.LabelManagedBy: renovate.ManagedByNudgeflow},
			Annotations: map[string]string{
				renovate.AnnotationNudgedComponents: "bundle",
				renovate.AnnotationNudgingComponent: "operand-a",
				renovate.AnnotationNudgingImage:     imageOf("operand-a") + ":on-push-abc",
				renovate.AnnotationNudgingPipeline:  build.Name,
				renovate.AnnotationWorkflowID:       id,
				renovate.AnnotationAttempt:          "1",
			}},
		Spec: tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusPending,
			PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}},
	}
	require.NoError(t, s.w.Kube.Create(ctx, held))
	s.waitFor("g", "the group has the build", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })
	world.Eventually(t, 30*time.Second, "the bridge wrote that the group took the held run's build", func() (bool, error) {
		var plr tektonv1.PipelineRun
		if err := s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: held.Name}, &plr); err != nil {
			return false, err
		}
		return plr.Annotations[konflux.AnnotationHeldOutcome] == konflux.HeldOutcomeDeliveredPrefix+"g", nil
	})

	s.annotate("g", "cancel=hand back, race")
	s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
	world.Eventually(t, 60*time.Second, "the handed-back build has a Renovate run that is not held", func() (bool, error) {
		for _, r := range s.renovateRuns() {
			if r.Name != held.Name && r.Annotations[konflux.AnnotationHeldBy] == "" && r.Annotations[renovate.AnnotationNudgingPipeline] == build.Name {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d Renovate run(s), none a hand-back", len(s.renovateRuns()))
	})
	desc, err := s.w.TemporalClient.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, "Running", desc.GetWorkflowExecutionInfo().GetStatus().String(), "the own Nudge was still running during the hand-back")
}

// The earlier race: the build's own Nudge is still running and has not
// launched its Renovate run when the group that collected the build (routed from
// the build itself) ends. The run it launches later could be held for that group,
// which has seen the build and would count it as taken: the hand-back must not
// count on that Nudge, and starts the group's own hand-back Nudge.
func TestHandBackBeforeTheOwnNudgeLaunched(t *testing.T) {
	s, build, _ := groupWithRunningOwnNudge(t)
	s.waitFor("g", "the group has the build", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })

	s.annotate("g", "cancel=hand back, early race")
	s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
	world.Eventually(t, 60*time.Second, "the handed-back build has a Renovate run of the group's hand-back Nudge", func() (bool, error) {
		for _, r := range s.renovateRuns() {
			if r.Annotations[renovate.AnnotationWorkflowID] == nudgeapi.HandBackWorkflowID(s.ns, string(build.UID), "bundle", string(s.group("g").UID)) &&
				r.Annotations[konflux.AnnotationHeldBy] == "" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d Renovate run(s), none of the hand-back Nudge", len(s.renovateRuns()))
	})
}

// groupWithRunningOwnNudge is a group g collecting operand-a and operand-b, a build
// of operand-a, and that build's own Nudge running for good: its task queue has no
// worker, as a slow or restarting worker leaves it for a while. It returns the
// scenario, the build and the Nudge's ID.
func groupWithRunningOwnNudge(t *testing.T) (*scenario, *tektonv1.PipelineRun, string) {
	s := newScenario(t, "operand-a", "operand-b")
	s.nudgeable()
	s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	s.explainOnFailure("g")
	digest := digestOf("operand-a", 1)
	build := s.buildRun("operand-a", digest, time.Now())
	id, _ := s.startOwnNudge(build, digest, "nobody-polls-"+s.ns)
	return s, build, id
}

// startOwnNudge starts the immediate Nudge of operand-a's build (of digest) for
// bundle under the build's own workflow ID, as the bridge does, on queue. A small
// backoff and several attempts: were a held run counted as a failure, the Nudge
// would launch again within a test's deadline.
func (s *scenario) startOwnNudge(build *tektonv1.PipelineRun, digest, queue string) (string, client.WorkflowRun) {
	s.t.Helper()
	id := nudgeapi.WorkflowID(s.ns, string(build.UID), "bundle")
	run, err := s.w.TemporalClient.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, nudgeapi.WorkflowName,
		nudgeapi.Request{Namespace: s.ns, Nudging: "operand-a", Nudged: "bundle", Mode: "immediate",
			Build: nudgeapi.Build{ImageURL: imageOf("operand-a") + ":on-push-abc", Digest: digest,
				PullSpec: imageOf("operand-a") + "@" + digest, BuildPipelineRun: build.Name, BuildUID: string(build.UID)},
			Tuning: nudgeapi.Tuning{MaxAttempts: 3, RetryBackoff: time.Second, PollInterval: 2 * time.Second}})
	require.NoError(s.t, err)
	return id, run
}
