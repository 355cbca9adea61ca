package konflux

import (
	"testing"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"knative.dev/pkg/apis"
)

// What a stand-in for Tekton writes is what nudgeflow's readers read: a done,
// succeeded run whose results BuildResults returns, with its times.
func TestSucceededBuildIsReadBack(t *testing.T) {
	var plr tektonv1.PipelineRun
	plr.Status.Results = []tektonv1.PipelineRunResult{{Name: "STALE", Value: *tektonv1.NewStructuredValues("x")}}
	started := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	SucceededBuild{ImageURL: "registry.local:5000/org/a:on-push", Digest: "sha256:1111",
		Started: started, Completed: started.Add(time.Minute), Message: "simulated"}.WriteStatus(&plr)

	url, digest := BuildResults(&plr)
	if url != "registry.local:5000/org/a:on-push" || digest != "sha256:1111" {
		t.Fatalf("BuildResults = %q, %q", url, digest)
	}
	if len(plr.Status.Results) != 2 {
		t.Fatalf("results = %v, want IMAGE_URL and IMAGE_DIGEST only", plr.Status.Results)
	}
	c := plr.Status.GetCondition(apis.ConditionSucceeded)
	if !plr.IsDone() || c == nil || !c.IsTrue() || c.Message != "simulated" {
		t.Fatalf("condition = %+v, want Succeeded=True with the message", c)
	}
	if !plr.Status.StartTime.Time.Equal(started) || !plr.Status.CompletionTime.Time.Equal(started.Add(time.Minute)) {
		t.Fatalf("times = %v, %v", plr.Status.StartTime, plr.Status.CompletionTime)
	}
}
