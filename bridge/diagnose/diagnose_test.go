package diagnose

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

func TestKeepOldestKeepsTheLimitOldestInOrder(t *testing.T) {
	base := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var list []UnroutedBuild
	// Arrival order is the API server's (namespace, name), not age.
	for _, b := range []UnroutedBuild{
		{Namespace: "a", Name: "x", Created: base.Add(3 * time.Second)},
		{Namespace: "b", Name: "y", Created: base},
		{Namespace: "a", Name: "z", Created: base.Add(time.Second)},
		{Namespace: "a", Name: "w", Created: base}, // same second as b/y: namespace breaks the tie
		{Namespace: "c", Name: "v", Created: base.Add(2 * time.Second)},
	} {
		list = keepOldest(list, b, 3)
	}
	var got []string
	for _, b := range list {
		got = append(got, b.Namespace+"/"+b.Name)
	}
	want := []string{"a/w", "b/y", "a/z"}
	if len(got) != len(want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kept %v, want %v", got, want)
		}
	}
}

func TestOverdueOf(t *testing.T) {
	created := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	group := func(phase appstudiov1alpha1.ChangeGroupPhase, timeout time.Duration) *appstudiov1alpha1.ChangeGroup {
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", CreationTimestamp: metav1.NewTime(created)}}
		cg.Status.Phase = phase
		if timeout > 0 {
			cg.Spec.Timeout = &metav1.Duration{Duration: timeout}
		}
		return cg
	}
	now := created.Add(2 * time.Hour)
	for _, tc := range []struct {
		name          string
		cg            *appstudiov1alpha1.ChangeGroup
		open, overdue bool
		by            time.Duration
	}{
		{"waiting past its timeout", group(appstudiov1alpha1.PhaseWaiting, time.Hour), true, true, time.Hour},
		{"no status past its timeout", group("", 90*time.Minute), true, true, 30 * time.Minute},
		{"ready follows its PR", group(appstudiov1alpha1.PhaseReady, time.Hour), true, false, 0},
		{"within its timeout", group(appstudiov1alpha1.PhaseWaiting, 3*time.Hour), true, false, 0},
		{"no timeout", group(appstudiov1alpha1.PhaseWaiting, 0), true, false, 0},
		{"completed", group(appstudiov1alpha1.PhaseCompleted, time.Hour), false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, open, overdue := overdueOf(tc.cg, now)
			if open != tc.open || overdue != tc.overdue || g.Overdue != tc.by {
				t.Fatalf("open=%t overdue=%t by %s; want %t %t %s", open, overdue, g.Overdue, tc.open, tc.overdue, tc.by)
			}
		})
	}
}
