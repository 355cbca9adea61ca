package builds

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

func snapshotOf(app, group string, verdict metav1.ConditionStatus, images ...string) mirrorv1alpha1.Snapshot {
	s := mirrorv1alpha1.Snapshot{Spec: mirrorv1alpha1.SnapshotSpec{Application: app, ComponentGroup: group}}
	for _, img := range images {
		s.Spec.Components = append(s.Spec.Components, mirrorv1alpha1.SnapshotComponent{Name: "operand", ContainerImage: img})
	}
	if verdict != "" {
		s.Status.Conditions = []metav1.Condition{{Type: mirrorv1alpha1.SnapshotTestSucceeded, Status: verdict}}
	}
	return s
}

// The rule for a validated edge without a gating group: a failure drops the build
// only once every Snapshot holding it, its application's or any ComponentGroup's,
// finished and none passed.
func TestUngatedBuildFailsOnlyWhenEverySnapshotFailed(t *testing.T) {
	const img, other = "quay.io/org/operand@sha256:1", "quay.io/org/operand@sha256:2"
	images := []string{img}
	for _, c := range []struct {
		name      string
		snapshots []mirrorv1alpha1.Snapshot
		want      bool
	}{
		{"the application's failed, no other", []mirrorv1alpha1.Snapshot{snapshotOf("app", "", metav1.ConditionFalse, img)}, true},
		{"the application's failed, a group's passed", []mirrorv1alpha1.Snapshot{
			snapshotOf("app", "", metav1.ConditionFalse, img), snapshotOf("", "g", metav1.ConditionTrue, img)}, false},
		{"the application's failed, a group's still tests", []mirrorv1alpha1.Snapshot{
			snapshotOf("app", "", metav1.ConditionFalse, img), snapshotOf("", "g", "", img)}, false},
		{"both failed", []mirrorv1alpha1.Snapshot{
			snapshotOf("app", "", metav1.ConditionFalse, img), snapshotOf("", "g", metav1.ConditionFalse, img)}, true},
		{"another build's pass does not count", []mirrorv1alpha1.Snapshot{
			snapshotOf("app", "", metav1.ConditionFalse, img), snapshotOf("", "g", metav1.ConditionTrue, other)}, true},
	} {
		require.Equal(t, c.want, allFailed(c.snapshots, "operand", images), c.name)
	}
}
