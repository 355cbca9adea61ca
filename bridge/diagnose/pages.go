// Package diagnose answers an operator's questions about nudgeflow's backlog from
// the API server without reading builds in full: the oldest
// build nudgeflow has not routed, the most overdue ChangeGroup, and why one build
// waits. At 100,000 PipelineRuns a full list is gigabytes (every run's spec and
// status); these answers read PipelineRuns as metadata only
// (metav1.PartialObjectMetadataList: labels, annotations, finalizers, timestamps),
// let the API server filter by label, and page with limit/continue so the client
// holds one page at a time. What they read in full is small: ChangeGroups, and for
// one build its namespace's NudgeConfig and its Component.
package diagnose

import (
	"context"
	"fmt"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// DefaultChunkSize is how many objects one list request asks for (kubectl's
// --chunk-size default).
const DefaultChunkSize = 500

// Reader lists and reads; a controller-runtime client of the API server (not a
// cache: these are one-off questions).
type Reader = ctrlclient.Reader

// eachRunMeta calls fn with the metadata of every PipelineRun in namespace ("" for
// all) that one of selectors matches, one page of chunk at a time. The selectors
// must be disjoint (konflux.Key.Selectors is): a run is visited once.
func eachRunMeta(ctx context.Context, r Reader, namespace string, chunk int64, selectors []labels.Selector, fn func(*metav1.PartialObjectMetadata)) error {
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	for _, sel := range selectors {
		cont := ""
		for {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(tektonv1.SchemeGroupVersion.WithKind("PipelineRunList"))
			opts := []ctrlclient.ListOption{ctrlclient.MatchingLabelsSelector{Selector: sel}, ctrlclient.Limit(chunk), ctrlclient.Continue(cont)}
			if namespace != "" {
				opts = append(opts, ctrlclient.InNamespace(namespace))
			}
			if err := r.List(ctx, list, opts...); err != nil {
				// A continue token outlives etcd's compaction (5 minutes by default) only
				// so long: a 410 Gone on a long scan means run it again.
				return fmt.Errorf("listing PipelineRun metadata labelled %s: %w", sel, err)
			}
			for i := range list.Items {
				fn(&list.Items[i])
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
	}
	return nil
}

// eachGroup calls fn with every ChangeGroup in namespace ("" for all), read in
// full (their status holds phase and members), one page of chunk at a time.
func eachGroup(ctx context.Context, r Reader, namespace string, chunk int64, fn func(*appstudiov1alpha1.ChangeGroup)) error {
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	cont := ""
	for {
		var list appstudiov1alpha1.ChangeGroupList
		opts := []ctrlclient.ListOption{ctrlclient.Limit(chunk), ctrlclient.Continue(cont)}
		if namespace != "" {
			opts = append(opts, ctrlclient.InNamespace(namespace))
		}
		if err := r.List(ctx, &list, opts...); err != nil {
			return fmt.Errorf("listing ChangeGroups: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		if cont = list.Continue; cont == "" {
			return nil
		}
	}
}

// buildSelectors select the build PipelineRuns in either form of Konflux's pipeline
// type label, disjointly.
func buildSelectors() []labels.Selector {
	s := konflux.PipelineTypeKey.Selectors(konflux.PipelineTypeBuild)
	return s[:]
}

// nudgeRunSelectors select the nudge (Renovate) PipelineRuns, whoever made them.
func nudgeRunSelectors() []labels.Selector {
	s := konflux.NudgeTypeKey.Selectors(konflux.NudgeTypeValue)
	return s[:]
}

// asRun wraps metadata in a PipelineRun so the bridge's own predicates (which read
// only metadata) judge it exactly as the bridge does.
func asRun(m *metav1.PartialObjectMetadata) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: m.ObjectMeta}
}
