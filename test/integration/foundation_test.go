package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// echoNudged is a trivial workflow: it proves the dev server runs our code and
// keeps our search attributes, nothing more.
func echoNudged(ctx workflow.Context, nudged string) (string, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.Phase.ValueSet("Waiting")); err != nil {
		return "", err
	}
	return "collecting builds for " + nudged, nil
}

// TestChangeGroupThroughRealServers creates a ChangeGroup in the real API server,
// runs a workflow for it on the real dev server and reads back its result and
// search attributes, both from the execution and through a visibility query.
func TestChangeGroupThroughRealServers(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)

	cg := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "bundle-x-update-123", Namespace: ns},
		Spec: appstudiov1alpha1.ChangeGroupSpec{
			NudgedComponent:   "bundle-x",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operator-image"}, {Name: "operand-a"}},
			Timeout:           &metav1.Duration{Duration: 24 * time.Hour},
		},
	}
	require.NoError(t, w.Kube.Create(ctx, cg))
	var stored appstudiov1alpha1.ChangeGroup
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), &stored))
	require.NotEmpty(t, stored.UID, "the API server assigns a UID")
	require.Equal(t, 24*time.Hour, stored.Spec.Timeout.Duration)

	taskQueue := "foundation-" + ns
	wk := worker.New(w.TemporalClient, taskQueue, worker.Options{WorkflowPanicPolicy: worker.FailWorkflow})
	wk.RegisterWorkflow(echoNudged)
	require.NoError(t, wk.Start())
	defer wk.Stop()

	workflowID := fmt.Sprintf("changegroup/%s/%s/%s", ns, stored.Name, stored.UID)
	run, err := w.TemporalClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflowID,
		TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.KubeNamespace.ValueSet(ns),
			searchattr.ChangeGroup.ValueSet(stored.Name),
			searchattr.NudgedComponent.ValueSet(stored.Spec.NudgedComponent),
		),
	}, echoNudged, stored.Spec.NudgedComponent)
	require.NoError(t, err)

	var result string
	require.NoError(t, run.Get(ctx, &result))
	require.Equal(t, "collecting builds for bundle-x", result)

	desc, err := w.TemporalClient.DescribeWorkflowExecution(ctx, workflowID, run.GetRunID())
	require.NoError(t, err)
	indexed := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(indexed["ChangeGroup"].GetData()), "bundle-x-update-123")
	require.Contains(t, string(indexed["Phase"].GetData()), "Waiting", "the workflow's upsert is stored")

	// Visibility is eventually consistent: wait until the query finds the run.
	query := fmt.Sprintf(`ChangeGroup = %q AND KubeNamespace = %q AND Phase = "Waiting"`, stored.Name, ns)
	world.Eventually(t, 30*time.Second, "workflow listed by its search attributes", func() (bool, error) {
		resp, err := w.TemporalClient.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == workflowID {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestAPIServerRejectsInvalidObjects proves the CRD rules run in the real API server
// and answer with messages a person can act on.
func TestAPIServerRejectsInvalidObjects(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)

	cases := []struct {
		name     string
		manifest string
		want     string
	}{
		{
			name: "ChangeGroup without nudgedComponent",
			manifest: `
apiVersion: appstudio.redhat.com/v1alpha1
kind: ChangeGroup
metadata: {name: no-nudged}
spec:
  nudgingComponents: [{name: operand-a}]`,
			want: "spec.nudgedComponent: Required value",
		},
		{
			name: "ChangeGroup with a malformed timeout",
			manifest: `
apiVersion: appstudio.redhat.com/v1alpha1
kind: ChangeGroup
metadata: {name: bad-timeout}
spec:
  nudgedComponent: bundle-x
  timeout: one day`,
			want: `spec.timeout: Invalid value: "string": timeout must be a duration such as 24h, 90m or 1h30m`,
		},
		{
			name: "NudgeConfig not named nudge-config",
			manifest: `
apiVersion: konflux-ci.dev/v1alpha1
kind: NudgeConfig
metadata: {name: my-nudges}
spec:
  nudges: [{from: a, to: b}]`,
			want: "NudgeConfig must be named 'nudge-config': there is one per namespace (singleton)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := world.Manifest(t, tc.manifest)
			obj.SetNamespace(ns)
			err := w.Kube.Create(ctx, obj)
			require.Error(t, err, "the API server must reject it")
			require.True(t, apierrors.IsInvalid(err), "rejected as invalid, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// The same objects, made valid, are accepted: the rules reject only what is wrong.
	ok := world.Manifest(t, `
apiVersion: appstudio.redhat.com/v1alpha1
kind: ChangeGroup
metadata: {name: good}
spec:
  nudgedComponent: bundle-x
  timeout: 1h30m`)
	ok.SetNamespace(ns)
	require.NoError(t, w.Kube.Create(ctx, ok))
	nc := world.Manifest(t, `
apiVersion: konflux-ci.dev/v1alpha1
kind: NudgeConfig
metadata: {name: nudge-config}
spec:
  nudges: [{from: a, to: b}]`)
	nc.SetNamespace(ns)
	require.NoError(t, w.Kube.Create(ctx, nc))
}
