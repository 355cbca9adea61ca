package bridge

import (
	"context"
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// MeasureBacklog makes the manager's metrics endpoint report the backlog gauges
// (metrics.ChangeGroupOldestWaiting, ChangeGroupOldestOverdue, BuildOldestUnrouted,
// ChangeGroupWorkflowClosed),
// measured from the manager's informer cache on each scrape: no API call. One bridge
// per process: the last one called measures.
func MeasureBacklog(mgr ctrl.Manager) error {
	if err := builds.IndexHeldBuilds(mgr.GetFieldIndexer()); err != nil {
		return err
	}
	metrics.MeasureBacklogWith(func(ctx context.Context) (metrics.Backlog, error) {
		return ReadBacklog(ctx, mgr.GetCache(), time.Now())
	})
	return nil
}

// ReadBacklog measures the backlog at now from r (the bridge's cache, with
// builds.IndexHeldBuilds).
func ReadBacklog(ctx context.Context, r ctrlclient.Reader, now time.Time) (metrics.Backlog, error) {
	b := metrics.Backlog{OldestWaiting: map[string]time.Duration{}}
	// Read only, so the cache's objects are read in place: a copy of every build
	// PipelineRun of a Konflux cluster on each scrape would cost more than the rest
	// of the bridge's work.
	var groups appstudiov1alpha1.ChangeGroupList
	if err := r.List(ctx, &groups, ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return b, fmt.Errorf("listing ChangeGroups: %w", err)
	}
	for i := range groups.Items {
		cg := &groups.Items[i]
		if cg.Status.Phase.IsFinal() {
			continue
		}
		phase := string(cg.Status.Phase)
		if phase == "" {
			// No status yet: the workflow has not written it (nudgeflow_changegroups
			// counts these as Initialized too).
			phase = string(appstudiov1alpha1.PhaseInitialized)
		}
		b.OldestWaiting[phase] = max(b.OldestWaiting[phase], now.Sub(cg.CreationTimestamp.Time))
		if changegroupcontroller.WorkflowClosed(cg.UID) {
			b.WorkflowClosed++
		}
		// The timeout ends a group still collecting; once CI is released (Ready) the
		// group follows its pull request to merge or close, however long that takes.
		if t := cg.Spec.Timeout; t != nil && t.Duration > 0 && cg.Status.Phase != appstudiov1alpha1.PhaseReady {
			b.OldestOverdue = max(b.OldestOverdue, now.Sub(cg.CreationTimestamp.Add(t.Duration)))
		}
	}
	runs, err := konflux.ListRuns(ctx, r, map[konflux.Key]string{konflux.PipelineTypeKey: konflux.PipelineTypeBuild},
		ctrlclient.MatchingFields{builds.HeldBuildsField: "true"}, ctrlclient.UnsafeDisableDeepCopy)
	if err != nil {
		return b, fmt.Errorf("listing build PipelineRuns: %w", err)
	}
	for i := range runs {
		plr := &runs[i]
		if !builds.Holds(plr) {
			continue
		}
		if at, ok := finishedAt(plr); ok {
			b.OldestUnrouted = max(b.OldestUnrouted, now.Sub(at))
		}
	}
	return b, nil
}

// finishedAt is when the build stopped changing: it ended (its completion time, or
// its Succeeded condition's last transition where Tekton wrote no completion time),
// or it was deleted while running. A running build is not finished.
func finishedAt(plr *tektonv1.PipelineRun) (time.Time, bool) {
	if plr.IsDone() {
		if ct := plr.Status.CompletionTime; ct != nil {
			return ct.Time, true
		}
		if c := plr.Status.GetCondition(apis.ConditionSucceeded); c != nil && !c.LastTransitionTime.Inner.IsZero() {
			return c.LastTransitionTime.Inner.Time, true
		}
	}
	if !plr.DeletionTimestamp.IsZero() {
		return plr.DeletionTimestamp.Time, true
	}
	return time.Time{}, false
}
