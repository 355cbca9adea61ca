package changegroup_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/test/world"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// A ChangeGroup whose workflow someone terminated keeps its open phase for good:
// nothing writes its status any more. The bridge used to swallow that (a
// signal-with-start refused, ErrEnded). Now its next reconcile marks the group
// (what nudgeflow_changegroup_workflow_closed counts, alert
// NudgeflowChangeGroupWorkflowClosed) and puts a Warning event on it. Meanwhile the
// group still intercepts nudges of its edges; the runbook's remedy (write a final
// phase by hand) stops that.
func TestATerminatedGroupWorkflowIsCountedAndToldOnTheGroup(t *testing.T) {
	s := newScenario(t, three...)
	ctx := context.Background()
	s.createGroup("g", three, 0)
	cg := s.waitFor("g", "its workflow wrote a status", time.Minute, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return cg.Status.WorkflowID != "" && !cg.Status.Phase.IsFinal()
	})
	require.False(t, changegroupcontroller.WorkflowClosed(cg.UID))

	// What an operator's `temporal workflow terminate` does.
	require.NoError(t, s.w.TemporalClient.TerminateWorkflow(ctx, cgwf.WorkflowID(s.ns, cg.Name, string(cg.UID)), "", "terminated by hand"))
	// Any annotation change reconciles the group.
	patch := ctrlclient.MergeFrom(cg.DeepCopy())
	cg.Annotations = map[string]string{"example.com/touched": "1"}
	require.NoError(t, s.w.Kube.Patch(ctx, cg, patch))

	world.Eventually(t, time.Minute, "the bridge marks the group", func() (bool, error) {
		return changegroupcontroller.WorkflowClosed(cg.UID), nil
	})
	world.Eventually(t, 30*time.Second, "a Warning event on the group says its workflow has closed", func() (bool, error) {
		var list corev1.EventList
		if err := s.w.Kube.List(ctx, &list, ctrlclient.InNamespace(s.ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == "g" && e.Reason == "WorkflowClosed" && e.Type == corev1.EventTypeWarning
		}), nil
	})
	require.False(t, s.group("g").Status.Phase.IsFinal(), "nothing ends the group")
	s.buildNow("operand-a", 1) // still intercepted by the group nobody will end

	// The runbook's remedy: the phase the workflow would have written, by hand.
	live := s.group("g")
	live.Status.Phase = appstudiov1alpha1.PhaseFailed
	require.NoError(t, s.w.Kube.Status().Update(ctx, live))
	n := 1
	world.Eventually(t, 30*time.Second, "the nudge of the next build runs (once the bridge's cache has the phase)", func() (bool, error) {
		n++
		nudge := s.build("operand-a", digestOf("operand-a", n), time.Now())
		if nudge.Spec.Status == tektonv1.PipelineRunSpecStatusCancelled {
			return false, fmt.Errorf("still intercepted: %v", nudge.Annotations)
		}
		return true, nil
	})
}
