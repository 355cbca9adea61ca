package konflux

import (
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
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
