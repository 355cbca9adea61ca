package renovaterun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Supersession is check-then-act across two launches: an older build's launch
// may pass its check (refuseIfSuperseded) before a newer build's run exists, and
// the newer launch may list the edge's runs (supersedeOlder) before the older run
// exists; the branch queue then starts the older run after the newer one, and
// its older digest lands last. So whenever nudgeflow is about to start a pending
// run (the launch right after its own create and list, and every release of a
// queued run: ReleaseNextOnBranch, StartIfFree, which stop every superseded run
// queued on the branch, not only the next; for a run Kueue will admit, the
// launch is the last look), it looks again, on a list read
// for that decision, for a run of the same edge for a newer build, whoever
// created it and whatever its state; if there is one, the run is stopped before
// it ever starts, exactly as supersedeOlder stops it (AnnotationSupersededBy,
// spec.status Cancelled): Tekton ends it cancelled and its Nudge ends Superseded.
//
// What is left: a newer run created between that list and the release sees the
// released older run and stops it (supersedeOlder), and waits for the branch
// until it ended (one run per branch), so the newer digest is written after the
// older one. A run that starts anyway (nothing on the cluster showed the newer
// one: pruned, another nudgeflow's) is refused by its step, which compares its
// build's start with the trailer of the nudge branch's head (branchcheck.go).

// newerRunOf names a run among all (the namespace's nudge runs) for a build of
// plr's edge that started after plr's, or "" when none is, or plr's build start
// is unknown (a run launched before runs carried it: nothing to compare, as
// refuseIfSuperseded).
func newerRunOf(ctx context.Context, c ctrlclient.Reader, plr *tektonv1.PipelineRun, all []tektonv1.PipelineRun) (string, error) {
	mine, err := time.Parse(time.RFC3339Nano, plr.Annotations[AnnotationBuiltAt])
	if err != nil {
		return "", nil
	}
	nudging, build := konflux.NudgingKey.Get(plr.Annotations), konflux.NudgingPipelineKey.Get(plr.Annotations)
	for _, nudged := range strings.Fields(konflux.NudgedKey.Get(plr.Annotations)) {
		runs, err := EdgeRunsOf(ctx, c, all, nudging, nudged, build)
		if err != nil {
			return "", err
		}
		for _, r := range runs {
			if r.BuiltAt.After(mine) && r.Run.Name != plr.Name {
				return r.Run.Name, nil
			}
		}
	}
	return "", nil
}

// stopSuperseded stops a pending run for a newer build's run before it starts.
func stopSuperseded(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, by string) error {
	return patchPending(ctx, c, plr, "stopping", stoppable, func(stopped *tektonv1.PipelineRun) {
		stopped.Spec.Status = tektonv1.PipelineRunSpecStatusCancelled
		stopped.Annotations[AnnotationSupersededBy] = by
		delete(stopped.Annotations, AnnotationQueuedForBranch)
	})
}

// stoppable: a pending run nudgeflow may stop before it starts, whoever lifts its
// pending (nudgeflow, or Kueue), but not one the interceptor held for a group
// (a group collects its build: konflux.HeldAtAdmission).
func stoppable(plr *tektonv1.PipelineRun) bool {
	return plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending && !konflux.HeldAtAdmission(plr.Annotations)
}

// StopIfSupersededInKueue stops a pending run that Kueue, not nudgeflow, will
// start (LabelKueueQueue), when a run of a newer build of its edge is among all:
// nudgeflow has no later look at it before Kueue admits it. It reports the newer run.
func StopIfSupersededInKueue(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, all []tektonv1.PipelineRun) (string, error) {
	if plr.Labels[LabelKueueQueue] == "" || !stoppable(plr) {
		return "", nil
	}
	by, err := newerRunOf(ctx, c, plr, all)
	if err != nil || by == "" {
		return "", err
	}
	return by, stopSuperseded(ctx, c, plr, by)
}

// EdgeRun is a nudge run of one edge and when its build started.
type EdgeRun struct {
	Run     *tektonv1.PipelineRun
	BuiltAt time.Time
}

// NudgeRuns lists the nudge runs of the namespace, whoever created them.
func NudgeRuns(ctx context.Context, c ctrlclient.Reader, ns string) ([]tektonv1.PipelineRun, error) {
	runs, err := konflux.ListRuns(ctx, c, map[konflux.Key]string{konflux.NudgeTypeKey: konflux.NudgeTypeValue}, ctrlclient.InNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("listing the nudge runs of %s: %w", ns, err)
	}
	return runs, nil
}

// EdgeRunsOf is edgeRuns reading builds with c.
func EdgeRunsOf(ctx context.Context, c ctrlclient.Reader, runs []tektonv1.PipelineRun, nudging, nudged, build string) ([]EdgeRun, error) {
	var out []EdgeRun
	for i := range runs {
		plr := &runs[i]
		if konflux.NudgingKey.Get(plr.Annotations) != nudging || konflux.NudgingPipelineKey.Get(plr.Annotations) == build ||
			!slices.Contains(strings.Fields(konflux.NudgedKey.Get(plr.Annotations)), nudged) {
			continue
		}
		at, err := runBuiltAt(ctx, c, plr)
		if err != nil {
			return nil, err
		}
		if !at.IsZero() {
			out = append(out, EdgeRun{Run: plr, BuiltAt: at})
		}
	}
	return out, nil
}

// runBuiltAt is when a run's build started: its annotation (nudgeflow's runs), else
// the build PipelineRun's start (build-service's and integration-service's runs);
// zero when neither is known (the build was pruned).
func runBuiltAt(ctx context.Context, c ctrlclient.Reader, plr *tektonv1.PipelineRun) (time.Time, error) {
	if v := plr.Annotations[AnnotationBuiltAt]; v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t, nil
		}
	}
	var build tektonv1.PipelineRun
	err := c.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: konflux.NudgingPipelineKey.Get(plr.Annotations)}, &build)
	if apierrors.IsNotFound(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the build of nudge run %s/%s: %w", plr.Namespace, plr.Name, err)
	}
	if build.Status.StartTime != nil {
		return build.Status.StartTime.Time, nil
	}
	return build.CreationTimestamp.Time, nil
}
