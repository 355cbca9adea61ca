package konflux

import (
	"context"
	"fmt"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Selectors are two disjoint label selectors whose union is every object labelled
// key=value in either form: the new form equal to value, or the old form equal to
// value and the new one not (absent or another value). One label selector cannot
// OR two keys; an informer per selector caches an object labelled both ways once.
func (k Key) Selectors(value string) [2]labels.Selector {
	byNew, _ := labels.NewRequirement(k.New, selection.Equals, []string{value})
	byOld, _ := labels.NewRequirement(k.Old, selection.Equals, []string{value})
	notNew, _ := labels.NewRequirement(k.New, selection.NotIn, []string{value})
	return [2]labels.Selector{labels.NewSelector().Add(*byNew), labels.NewSelector().Add(*byOld, *notNew)}
}

// ListRuns lists the PipelineRuns labelled with every key of want in its new forms,
// and those labelled with all its old forms, each run once. A run labelled partly
// new and partly old is missed: no Konflux service writes one (build-service
// writes all old keys on old-model builds and all new ones on new-model builds).
func ListRuns(ctx context.Context, r ctrlclient.Reader, want map[Key]string, opts ...ctrlclient.ListOption) ([]tektonv1.PipelineRun, error) {
	byNew, byOld := ctrlclient.MatchingLabels{}, ctrlclient.MatchingLabels{}
	for k, v := range want {
		byNew[k.New], byOld[k.Old] = v, v
	}
	seen := map[string]bool{}
	var runs []tektonv1.PipelineRun
	for _, sel := range []ctrlclient.MatchingLabels{byNew, byOld} {
		var list tektonv1.PipelineRunList
		if err := r.List(ctx, &list, append(append([]ctrlclient.ListOption{}, opts...), sel)...); err != nil {
			return nil, fmt.Errorf("listing PipelineRuns labelled %v: %w", map[string]string(sel), err)
		}
		for _, plr := range list.Items {
			if key := plr.Namespace + "/" + plr.Name; !seen[key] {
				seen[key] = true
				runs = append(runs, plr)
			}
		}
	}
	return runs, nil
}
