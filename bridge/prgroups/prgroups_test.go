package prgroups

import (
	"testing"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/bridge/builds"
)

func plr(event string, extra map[string]string) *tektonv1.PipelineRun {
	a := map[string]string{builds.KeyEventType: event}
	for k, v := range extra {
		a[k] = v
	}
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{builds.LabelComponent: "a", builds.LabelPipelineType: builds.PipelineTypeBuild},
		Annotations: a}}
}

func TestIsPullRequestBuild(t *testing.T) {
	for _, c := range []struct {
		p    *tektonv1.PipelineRun
		want bool
	}{
		{plr("pull_request", nil), true},
		{plr("Merge Request", nil), true},
		{plr("push", nil), false},
		{plr("Push", nil), false},
		{plr("incoming", nil), false},
		{plr("retest-comment", nil), false},
		{plr("retest-comment", map[string]string{AnnotationPRNumber: "4"}), true},
		{plr("", nil), false},
	} {
		if got := isPullRequestBuild(c.p); got != c.want {
			t.Errorf("event %q %v: got %v", c.p.Annotations[builds.KeyEventType], c.p.Annotations, got)
		}
		// Never both paths.
		if isPullRequestBuild(c.p) && builds.IsPushBuild(c.p) {
			t.Errorf("event %q is both a push and a pull-request build", c.p.Annotations[builds.KeyEventType])
		}
	}
	notBuild := plr("pull_request", nil)
	notBuild.Labels[builds.LabelPipelineType] = "test"
	if isPullRequestBuild(notBuild) {
		t.Error("a test pipeline is not a build")
	}
}
