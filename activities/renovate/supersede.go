package renovate

import (
	"context"
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// Superseded builds never roll a digest back. Renovate writes the digest the
// built tag resolves to when it runs, so a run for an older build that starts (or
// retries, or finishes) after a newer build's run would put the older digest back.
// Every nudgeflow run carries its build's start (AnnotationBuiltAt); LaunchRenovate
// refuses to start a run when a run of the same edge for a newer build exists, and
// once it started a run it stops the edge's runs for older builds that have not
// ended (AnnotationSupersededBy, then spec.status Cancelled). Both end the older
// nudge as superseded, not failed: the newer build's nudge carries the change.
const ()

// edgeRuns picks of runs those of nudging -> nudged, except those of build itself,
// with their builds' start. They point into runs, so a write to one shows there.
func (a *Activities) edgeRuns(ctx context.Context, runs []tektonv1.PipelineRun, nudging, nudged, build string) ([]renovaterun.EdgeRun, error) {
	return renovaterun.EdgeRunsOf(ctx, a.Kube, runs, nudging, nudged, build)
}

// refuseIfSuperseded returns ErrorTypeSuperseded when a run of the edge exists for
// a build newer than req's.
func (a *Activities) refuseIfSuperseded(ctx context.Context, req renovateapi.LaunchRequest) error {
	if req.BuiltAt.IsZero() {
		return nil // recorded before builds carried their start: nothing to compare
	}
	all, err := renovaterun.NudgeRuns(ctx, a.Kube, req.Namespace)
	if err != nil {
		return err
	}
	runs, err := a.edgeRuns(ctx, all, req.Nudging, req.Nudged, req.BuildPipelineRun)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.BuiltAt.After(req.BuiltAt) {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a newer build of %s (started %s) already nudges %s with run %s: not rolling back to %s (started %s)",
					req.Nudging, r.BuiltAt.UTC().Format(time.RFC3339), req.Nudged, r.Run.Name, req.ImageURL, req.BuiltAt.UTC().Format(time.RFC3339)),
				renovateapi.ErrorTypeSuperseded, nil, r.Run.Name)
		}
	}
	return nil
}

// supersedeOlder stops nudgeflow's runs of the edge for older builds that have not
// ended: they would write an older digest after this run's. all are the
// namespace's nudge runs; the ones it stops are updated there.
func (a *Activities) supersedeOlder(ctx context.Context, req renovateapi.LaunchRequest, all []tektonv1.PipelineRun) error {
	if req.BuiltAt.IsZero() {
		return nil
	}
	runs, err := a.edgeRuns(ctx, all, req.Nudging, req.Nudged, req.BuildPipelineRun)
	if err != nil {
		return err
	}
	for _, r := range runs {
		plr := r.Run
		if !r.BuiltAt.Before(req.BuiltAt) || plr.Labels[LabelManagedBy] != ManagedByNudgeflow || renovaterun.StatusOf(plr).Done ||
			plr.Annotations[renovaterun.AnnotationSupersededBy] != "" {
			continue
		}
		patch := ctrlclient.MergeFrom(plr.DeepCopy())
		plr.Annotations[renovaterun.AnnotationSupersededBy] = req.Name
		plr.Spec.Status = tektonv1.PipelineRunSpecStatusCancelled
		if err := a.Kube.Patch(ctx, plr, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("stopping run %s/%s of an older build: %w", plr.Namespace, plr.Name, err)
		}
		activity.GetLogger(ctx).Info("stopped the Renovate run of an older build of the same edge", "run", plr.Name,
			"supersededBy", req.Name, "nudging", req.Nudging, "nudged", req.Nudged)
	}
	return nil
}
