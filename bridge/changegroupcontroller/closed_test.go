package changegroupcontroller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// closedTemporal answers every signal-with-start as Temporal does for a workflow ID
// whose execution has closed under WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE.
type closedTemporal struct{ client.Client }

func (closedTemporal) SignalWithStartWorkflow(context.Context, string, string, any, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("workflow execution already finished", "", "run")
}

// A group whose CR is not final while its workflow has closed is marked (what
// nudgeflow_changegroup_workflow_closed counts) and told on the group with a
// Warning event; the mark goes once the CR is final.
func TestAGroupWhoseWorkflowClosedBeforeItsStatusSaidSoIsMarked(t *testing.T) {
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: types.UID(t.Name()),
		Finalizers: []string{konflux.FinalizerChangeGroup}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle"}}
	cg.Status.Phase = appstudiov1alpha1.PhaseWaiting
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(cg).WithStatusSubresource(cg).Build()
	rec := record.NewFakeRecorder(10)
	r := &Reconciler{Kube: c, Temporal: closedTemporal{}, Starter: &Starter{Temporal: closedTemporal{}, TaskQueue: "q"}, Recorder: rec}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "g"}}

	require.False(t, WorkflowClosed(cg.UID))
	_, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err, "a closed workflow is no reconcile error: retrying cannot reopen it")
	require.True(t, WorkflowClosed(cg.UID))
	require.Len(t, rec.Events, 1)
	require.Contains(t, <-rec.Events, "Warning WorkflowClosed")

	cg.Status.Phase = appstudiov1alpha1.PhaseCancelled
	require.NoError(t, c.Status().Update(context.Background(), cg))
	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	require.False(t, WorkflowClosed(cg.UID), "final now: nothing to page about")
}
