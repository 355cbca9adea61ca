package diagnose

import (
	"context"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// UnroutedQuery selects the builds UnroutedBuilds reports.
type UnroutedQuery struct {
	// Namespace limits the scan ("" for every namespace).
	Namespace string
	// IncludeUnheld adds push builds neither held nor routed: builds of components
	// without nudge edges (never nudgeflow's), and builds the hold webhook skipped
	// (it fails open) that no bridge has seen yet.
	IncludeUnheld bool
	// Since drops builds created before it (zero: none).
	Since time.Time
	// Limit is how many of the oldest are kept (0: 10).
	Limit int
	// ChunkSize is the page size of the list requests (0: DefaultChunkSize).
	ChunkSize int64
}

// UnroutedBuild is one build nudgeflow has not let go.
type UnroutedBuild struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Component string    `json:"component"`
	Created   time.Time `json:"created"`
	// Held: the build-routing finalizer is on it (the pruner waits for nudgeflow).
	Held bool `json:"held"`
	// Routed is the bridge's acknowledgement when it wrote one: a held build that
	// carries it is routed and waits only for its release.
	Routed string `json:"routed,omitempty"`
	// Deleting: someone (the pruner) deleted it and the finalizer keeps it.
	Deleting bool `json:"deleting,omitempty"`
	// PaCState is Pipelines as Code's state label (completed: the build ended).
	PaCState string `json:"pacState,omitempty"`
	// ISVerdict is integration-service's acknowledgement on the build, when written.
	ISVerdict *string `json:"isVerdict,omitempty"`
}

// UnroutedReport is UnroutedBuilds's answer.
type UnroutedReport struct {
	// Scanned counts the build PipelineRuns read (as metadata).
	Scanned int `json:"scanned"`
	// Held counts the builds under the build-routing finalizer.
	Held int `json:"held"`
	// Unheld counts push builds neither held nor routed (with IncludeUnheld only).
	Unheld int `json:"unheld"`
	// Oldest are the oldest of those, by creation, oldest first.
	Oldest []UnroutedBuild `json:"oldest"`
}

// UnroutedBuilds finds the oldest builds nudgeflow holds (and with IncludeUnheld,
// the push builds it neither holds nor routed), reading build PipelineRuns as
// metadata only. Metadata has no completion time: builds are ordered by creation,
// and PaCState and Deleting say which have ended.
func UnroutedBuilds(ctx context.Context, r Reader, q UnroutedQuery) (UnroutedReport, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	var rep UnroutedReport
	err := eachRunMeta(ctx, r, q.Namespace, q.ChunkSize, buildSelectors(), func(m *metav1.PartialObjectMetadata) {
		rep.Scanned++
		plr := asRun(m)
		held := builds.Holds(plr)
		if !held {
			// What the bridge would hold or route: an unsettled push build, not of a
			// merge queue (never nudgeflow's unless held).
			if !q.IncludeUnheld || !builds.IsPushBuild(plr) || builds.Acknowledged(plr) || builds.IsMergeQueueBuild(plr) {
				return
			}
		}
		if !q.Since.IsZero() && m.CreationTimestamp.Time.Before(q.Since) {
			return
		}
		if held {
			rep.Held++
		} else {
			rep.Unheld++
		}
		b := UnroutedBuild{
			Namespace: m.Namespace, Name: m.Name, Component: konflux.ComponentOf(m.Labels), Created: m.CreationTimestamp.Time,
			Held: held, Routed: m.Annotations[konflux.AnnotationNudgeRouted], Deleting: !m.DeletionTimestamp.IsZero(),
			PaCState: pacState(m),
		}
		if v, ok := konflux.ISNudgeProcessedKey.Lookup(m.Annotations); ok {
			b.ISVerdict = &v
		}
		rep.Oldest = keepOldest(rep.Oldest, b, limit)
	})
	return rep, err
}

// keepOldest inserts b into the sorted list and keeps its first limit entries: the
// scan holds limit builds, not every candidate.
func keepOldest(list []UnroutedBuild, b UnroutedBuild, limit int) []UnroutedBuild {
	i := sort.Search(len(list), func(i int) bool { return olderBuild(b, list[i]) })
	if i >= limit {
		return list
	}
	list = append(list, UnroutedBuild{})
	copy(list[i+1:], list[i:])
	list[i] = b
	if len(list) > limit {
		list = list[:limit]
	}
	return list
}

// olderBuild orders by creation, then namespace and name (creation times have
// one-second resolution), so two runs give the same answer.
func olderBuild(a, b UnroutedBuild) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func pacState(m *metav1.PartialObjectMetadata) string {
	if s := m.Labels[konflux.LabelPaCState]; s != "" {
		return s
	}
	return m.Annotations[konflux.LabelPaCState]
}
