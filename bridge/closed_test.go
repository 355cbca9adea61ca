package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// closedTemporal answers a signal-with-start as Temporal does for a closed
// workflow's ID (REJECT_DUPLICATE).
type closedTemporal struct{ client.Client }

func (closedTemporal) SignalWithStartWorkflow(context.Context, string, string, any, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("workflow execution already finished", "", "run")
}

// nudgeflow_changegroup_workflow_closed counts the groups whose workflow the bridge
// found closed and whose CR the cache still shows not final: a group marked from a
// copy read just before its final status landed counts for nothing.
func TestWorkflowClosedGaugeCountsGroupsStuckInAnOpenPhase(t *testing.T) {
	group := func(name string, phase appstudiov1alpha1.ChangeGroupPhase) *appstudiov1alpha1.ChangeGroup {
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant",
			UID: types.UID(t.Name() + "/" + name), CreationTimestamp: metav1.NewTime(time.Unix(0, 0))}}
		cg.Status.Phase = phase
		return cg
	}
	orphan, readyOrphan := group("orphan", appstudiov1alpha1.PhaseWaiting), group("ready-orphan", appstudiov1alpha1.PhaseReady)
	ended, running := group("ended", appstudiov1alpha1.PhaseCompleted), group("running", appstudiov1alpha1.PhaseWaiting)
	starter := &changegroupcontroller.Starter{Temporal: closedTemporal{}, TaskQueue: "q"}
	for _, cg := range []*appstudiov1alpha1.ChangeGroup{orphan, readyOrphan, group("ended", appstudiov1alpha1.PhaseWaiting)} {
		require.True(t, errors.Is(starter.SignalWithStart(context.Background(), cg, "spec", nil), changegroupcontroller.ErrEnded))
	}
	indexed := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(orphan, readyOrphan, ended, running)
	require.NoError(t, builds.IndexHeldBuilds(fakeIndexer{indexed}))
	r := indexed.Build()
	b, err := readBacklogOf(r)
	require.NoError(t, err)
	require.Equal(t, 2, b.WorkflowClosed)

	metrics.MeasureBacklogWith(func(ctx context.Context) (metrics.Backlog, error) { return readBacklogOf(r) })
	want := `
# HELP nudgeflow_changegroup_workflow_closed ChangeGroups whose status is not final although the bridge found their workflow closed (counted by the leader).
# TYPE nudgeflow_changegroup_workflow_closed gauge
nudgeflow_changegroup_workflow_closed 2
`
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want), metrics.ChangeGroupWorkflowClosed))
}

func readBacklogOf(r ctrlclient.Reader) (metrics.Backlog, error) {
	return ReadBacklog(context.Background(), r, time.Unix(3600, 0))
}
