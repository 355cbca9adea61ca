package grouplookup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

func TestHeldAt(t *testing.T) {
	created := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ended := created.Add(time.Hour)
	active := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
		Status: appstudiov1alpha1.ChangeGroupStatus{Phase: appstudiov1alpha1.PhaseWaiting}}
	done := active.DeepCopy()
	done.Status.Phase = appstudiov1alpha1.PhaseCompleted
	done.Status.CompletionTime = &metav1.Time{Time: ended}
	cases := []struct {
		name string
		cg   *appstudiov1alpha1.ChangeGroup
		at   time.Time
		want bool
	}{
		{"before the group existed", active, created.Add(-time.Second), false},
		{"while active", active, created.Add(time.Minute), true},
		{"finished while the ended group was active", done, ended.Add(-time.Second), true},
		{"same second as the end: nudged, not lost", done, ended, false},
		{"after the group ended", done, ended.Add(time.Second), false},
	}
	for _, tc := range cases {
		if got := HeldAt(tc.cg, tc.at); got != tc.want {
			t.Errorf("%s: HeldAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}
