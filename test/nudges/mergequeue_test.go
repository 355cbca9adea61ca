package nudges

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// A merge-queue build (gh-readonly-queue/..., both spellings of
// Pipelines as Code's source-branch) is a speculative image. Of a component with a
// validated edge, a ChangeGroup member edge and an immediate edge, it reaches no
// workflow: not held at creation, released unrouted when held anyway (an older
// bridge's hold), and nothing in Temporal; the same component's normal push build
// reaches all three.
func TestMergeQueueBuildReachesNoWorkflow(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	for _, c := range []string{"bundle", "grouped", "direct"} {
		f.component(c, f.repoURL("github.com", c), nil)
	}
	f.credentials("github.com")
	f.nudgeConfig(validated("operand", "bundle", "gate"), immediate("operand", "grouped"), immediate("operand", "direct"))
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "grouped-update", Finalizers: []string{konflux.FinalizerChangeGroup}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "grouped",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}, {Name: "operand-b"}}}}
	f.create(cg)
	cgID := changegroupapi.WorkflowID(f.ns, cg.Name, string(cg.UID))
	_, err := f.w.TemporalClient.ExecuteWorkflow(f.ctx, client.StartWorkflowOptions{ID: cgID, TaskQueue: standInQueue}, changegroupapi.WorkflowName)
	require.NoError(t, err)

	// Build 1: the bare branch. Never held, and a reconcile (as a resync would run
	// it) neither holds, routes nor annotates it.
	mq1 := f.newBuild("operand", 1, nil, map[string]string{konflux.AnnotationSourceBranch: "gh-readonly-queue/main/pr-11-" + fmt.Sprintf("%040x", 1)})
	require.NotContains(t, mq1.Finalizers, konflux.FinalizerBuildRouting, "a merge-queue build is not held at creation")
	f.succeed(mq1, 1)
	_, err = f.reconciler().Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(mq1)})
	require.NoError(t, err)
	got := f.get(mq1)
	require.Empty(t, got.Finalizers)
	require.NotContains(t, got.Annotations, konflux.AnnotationNudgeRouted, "not nudgeflow's: not annotated")

	// Build 2: refs/heads/ spelling, held by hand as an older bridge would have
	// held it: the running bridge releases it as merge-queue, routing nothing.
	mq2 := f.newBuild("operand", 2, nil, map[string]string{konflux.AnnotationSourceBranch: "refs/heads/gh-readonly-queue/main/pr-12-" + fmt.Sprintf("%040x", 2)})
	require.NotContains(t, mq2.Finalizers, konflux.FinalizerBuildRouting, "not held at creation (refs/heads/ spelling)")
	require.NoError(t, f.w.Kube.Patch(f.ctx, mq2, ctrlclient.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, konflux.FinalizerBuildRouting)))))
	f.succeed(mq2, 2)
	require.Equal(t, builds.RoutedMergeQueue, f.waitAcknowledged(mq2).Annotations[konflux.AnnotationNudgeRouted])

	// Build 3: a normal push build of main reaches all three edges.
	pushed := f.newBuild("operand", 3, nil, map[string]string{konflux.AnnotationSourceBranch: "main"})
	require.Contains(t, pushed.Finalizers, konflux.FinalizerBuildRouting, "a push to main is held")
	f.succeed(pushed, 3)
	require.Equal(t, "bundle,direct,grouped", f.waitAcknowledged(pushed).Annotations[konflux.AnnotationNudgeRouted])

	var inGroup []changegroupapi.ComponentBuilt
	world.Eventually(t, waitFor, "the ChangeGroup received the push build", func() (bool, error) {
		inGroup = nil
		return f.query(cgID, changegroupapi.QueryState, &inGroup) == nil && len(inGroup) > 0, nil
	})
	require.Len(t, inGroup, 1, "the group got the push build only")
	require.Equal(t, digestOf(3), inGroup[0].Digest)
	st := f.validatedState("operand", "bundle", "the validated edge received the push build", func(st validatednudge.State) bool { return len(st.SeenBuilds) > 0 })
	require.Equal(t, []string{string(pushed.UID) + "/" + digestOf(3)}, st.SeenBuilds, "the validated edge got the push build only")
	direct := nudgeapi.WorkflowID(f.ns, string(pushed.UID), "direct")
	world.Eventually(t, waitFor, "the push build's Nudge of direct is listed", func() (bool, error) { return f.runID(direct) != "", nil })
	for _, mq := range []string{string(mq1.UID), string(mq2.UID)} {
		for _, target := range []string{"bundle", "grouped", "direct"} {
			require.Empty(t, f.runID(nudgeapi.WorkflowID(f.ns, mq, target)), "no Nudge of %s from a merge-queue build", target)
		}
	}
	// (The stand-in group's workflow, started by the test, carries no namespace
	// search attribute; its state above shows what it got.)
	require.ElementsMatch(t, []string{validatednudge.WorkflowID(f.ns, "operand", "bundle"), direct}, f.workflows(),
		"the validated edge and the push build's Nudge: nothing from the merge-queue builds")
}
