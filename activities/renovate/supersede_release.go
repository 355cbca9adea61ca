package renovate

import (
	"context"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
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
		runs, err := edgeRunsOf(ctx, c, all, nudging, nudged, build)
		if err != nil {
			return "", err
		}
		for _, r := range runs {
			if r.builtAt.After(mine) && r.plr.Name != plr.Name {
				return r.plr.Name, nil
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

// stopIfSupersededInKueue stops a pending run that Kueue, not nudgeflow, will
// start (LabelKueueQueue), when a run of a newer build of its edge is among all:
// nudgeflow has no later look at it before Kueue admits it. It reports the newer run.
func stopIfSupersededInKueue(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, all []tektonv1.PipelineRun) (string, error) {
	if plr.Labels[LabelKueueQueue] == "" || !stoppable(plr) {
		return "", nil
	}
	by, err := newerRunOf(ctx, c, plr, all)
	if err != nil || by == "" {
		return "", err
	}
	return by, stopSuperseded(ctx, c, plr, by)
}
