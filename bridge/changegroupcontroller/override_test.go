package changegroupcontroller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// updateAnswer is a Temporal client whose updates all end with err.
type updateAnswer struct {
	client.Client
	err error
}

func (u updateAnswer) UpdateWorkflow(context.Context, client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	return nil, u.err
}

// The bridge's side of an override at creation: the annotation is cleared only
// when the workflow refused the request itself (or is gone); an update that failed otherwise (a
// validator panic, as the one that read the state before it existed) was not
// applied: the annotation stays, to be applied by the next reconcile.
func TestBridgeKeepsAnOverrideThatWasNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		cleared bool
	}{
		{"refused", temporal.NewApplicationError(`component "zz" is not a member`, cgwf.OverrideRejected), true},
		{"validator panic", temporal.NewApplicationError("update validator panic: nil pointer dereference", "PanicError"), false},
		{"other failure", errors.New("connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: "u",
				Annotations: map[string]string{konflux.AnnotationAction: "cancel"}}}
			c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(cg).Build()
			rec := record.NewFakeRecorder(10)
			r := &Reconciler{Kube: c, Temporal: updateAnswer{err: tc.err}, Recorder: rec}
			res, err := r.applyAction(context.Background(), cg, "changegroup/ns/g/u", "cancel")
			require.NoError(t, err)
			var got appstudiov1alpha1.ChangeGroup
			require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKeyFromObject(cg), &got))
			_, kept := got.Annotations[konflux.AnnotationAction]
			require.Equal(t, !tc.cleared, kept, "annotation kept")
			if !tc.cleared {
				require.NotZero(t, res.RequeueAfter, "tried again")
			}
		})
	}
}
