package renovate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// A held run whose fate the bridge has not written is an UndecidedHeldRun that
// says when the run was created (a hand-back fails open by its age); a written
// fate answers.
func TestNudgeMayEndHeldNamesAnUndecidedRun(t *testing.T) {
	created := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	run := func(name, attempt, outcome string) *tektonv1.PipelineRun {
		a := map[string]string{AnnotationWorkflowID: "nudge/tenant/uid/bundle", AnnotationAttempt: attempt, konflux.AnnotationHeldBy: "bundle=g"}
		if outcome != "" {
			a[konflux.AnnotationHeldOutcome] = outcome
		}
		return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}, Annotations: a}}
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(run("r-1", "1", konflux.HeldOutcomeReturned), run("r-2", "2", "")).Build()
	_, err := NudgeMayEndHeld(ctx, c, "tenant", "nudge/tenant/uid/bundle")
	var undecided *UndecidedHeldRun
	require.True(t, errors.As(err, &undecided), "%v", err)
	require.Equal(t, "r-2", undecided.Name)
	require.True(t, created.Equal(undecided.Created))

	c = fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(run("r-1", "1", konflux.HeldOutcomeDeliveredPrefix+"g")).Build()
	held, err := NudgeMayEndHeld(ctx, c, "tenant", "nudge/tenant/uid/bundle")
	require.NoError(t, err)
	require.True(t, held)
}
