package konflux

import (
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// BuildResults reads IMAGE_URL and IMAGE_DIGEST from a build PipelineRun; either is
// "" when the build did not report it.
func BuildResults(plr *tektonv1.PipelineRun) (imageURL, digest string) {
	for _, res := range plr.Status.Results {
		switch res.Name {
		case ResultImageURL:
			imageURL = strings.TrimSpace(res.Value.StringVal)
		case ResultImageDigest:
			digest = strings.TrimSpace(res.Value.StringVal)
		}
	}
	return imageURL, digest
}

// SucceededBuild is what Tekton writes on a Konflux build PipelineRun that succeeded.
// nudgeflow only reads builds; the dev stack and the tests stand in for Tekton with
// WriteStatus, so every simulated build carries the same status the readers expect.
type SucceededBuild struct {
	// ImageURL and Digest are the IMAGE_URL and IMAGE_DIGEST results.
	ImageURL, Digest string
	// Started and Completed are the run's start and completion times.
	Started, Completed time.Time
	// Message is the Succeeded condition's message (Tekton's: the task counts).
	Message string
}

// WriteStatus sets plr's start and completion times, its Succeeded condition and its
// IMAGE_URL and IMAGE_DIGEST results (replacing any results it had).
func (b SucceededBuild) WriteStatus(plr *tektonv1.PipelineRun) {
	started, completed := metav1.NewTime(b.Started), metav1.NewTime(b.Completed)
	plr.Status.StartTime, plr.Status.CompletionTime = &started, &completed
	plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue,
		Reason: tektonv1.PipelineRunReasonSuccessful.String(), Message: b.Message})
	plr.Status.Results = []tektonv1.PipelineRunResult{
		{Name: ResultImageURL, Value: *tektonv1.NewStructuredValues(b.ImageURL)},
		{Name: ResultImageDigest, Value: *tektonv1.NewStructuredValues(b.Digest)},
	}
}
