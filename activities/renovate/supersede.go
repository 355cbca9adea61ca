package renovate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Superseded builds never roll a digest back. Renovate writes the digest the
// built tag resolves to when it runs, so a run for an older build that starts (or
// retries, or finishes) after a newer build's run would put the older digest back.
// Every nudgeflow run carries its build's start (AnnotationBuiltAt); LaunchRenovate
// refuses to start a run when a run of the same edge for a newer build exists, and
// once it started a run it stops the edge's runs for older builds that have not
// ended (AnnotationSupersededBy, then spec.status Cancelled). Both end the older
// nudge as superseded, not failed: the newer build's nudge carries the change.
const (
	// AnnotationBuiltAt is the start of the build a run nudges (RFC 3339).
	AnnotationBuiltAt = "nudgeflow.konflux-ci.dev/built-at"
	// AnnotationSupersededBy names the run for a newer build that stopped this one.
	AnnotationSupersededBy = "nudgeflow.konflux-ci.dev/superseded-by"
	// ErrorTypeSuperseded is LaunchRenovate's (non-retryable) error when a newer
	// build of the nudging component already has a run for the target.
	ErrorTypeSuperseded = "Superseded"
)

// edgeRun is a nudge run of one edge and when its build started.
type edgeRun struct {
	plr     *tektonv1.PipelineRun
	builtAt time.Time
}

// nudgeRuns lists the nudge runs of the namespace, whoever created them.
func nudgeRuns(ctx context.Context, c ctrlclient.Reader, ns string) ([]tektonv1.PipelineRun, error) {
	runs, err := konflux.ListRuns(ctx, c, map[konflux.Key]string{konflux.NudgeTypeKey: konflux.NudgeTypeValue}, ctrlclient.InNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("listing the nudge runs of %s: %w", ns, err)
	}
	return runs, nil
}

// edgeRuns picks of runs those of nudging -> nudged, except those of build itself,
// with their builds' start. They point into runs, so a write to one shows there.
func (a *Activities) edgeRuns(ctx context.Context, runs []tektonv1.PipelineRun, nudging, nudged, build string) ([]edgeRun, error) {
	return edgeRunsOf(ctx, a.Kube, runs, nudging, nudged, build)
}

// edgeRunsOf is edgeRuns reading builds with c.
func edgeRunsOf(ctx context.Context, c ctrlclient.Reader, runs []tektonv1.PipelineRun, nudging, nudged, build string) ([]edgeRun, error) {
	var out []edgeRun
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
			out = append(out, edgeRun{plr: plr, builtAt: at})
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

// refuseIfSuperseded returns ErrorTypeSuperseded when a run of the edge exists for
// a build newer than req's.
func (a *Activities) refuseIfSuperseded(ctx context.Context, req LaunchRequest) error {
	if req.BuiltAt.IsZero() {
		return nil // recorded before builds carried their start: nothing to compare
	}
	all, err := nudgeRuns(ctx, a.Kube, req.Namespace)
	if err != nil {
		return err
	}
	runs, err := a.edgeRuns(ctx, all, req.Nudging, req.Nudged, req.BuildPipelineRun)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.builtAt.After(req.BuiltAt) {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a newer build of %s (started %s) already nudges %s with run %s: not rolling back to %s (started %s)",
					req.Nudging, r.builtAt.UTC().Format(time.RFC3339), req.Nudged, r.plr.Name, req.ImageURL, req.BuiltAt.UTC().Format(time.RFC3339)),
				ErrorTypeSuperseded, nil, r.plr.Name)
		}
	}
	return nil
}

// supersedeOlder stops nudgeflow's runs of the edge for older builds that have not
// ended: they would write an older digest after this run's. all are the
// namespace's nudge runs; the ones it stops are updated there.
func (a *Activities) supersedeOlder(ctx context.Context, req LaunchRequest, all []tektonv1.PipelineRun) error {
	if req.BuiltAt.IsZero() {
		return nil
	}
	runs, err := a.edgeRuns(ctx, all, req.Nudging, req.Nudged, req.BuildPipelineRun)
	if err != nil {
		return err
	}
	for _, r := range runs {
		plr := r.plr
		if !r.builtAt.Before(req.BuiltAt) || plr.Labels[LabelManagedBy] != ManagedByNudgeflow || StatusOf(plr).Done ||
			plr.Annotations[AnnotationSupersededBy] != "" {
			continue
		}
		patch := ctrlclient.MergeFrom(plr.DeepCopy())
		plr.Annotations[AnnotationSupersededBy] = req.Name
		plr.Spec.Status = tektonv1.PipelineRunSpecStatusCancelled
		if err := a.Kube.Patch(ctx, plr, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("stopping run %s/%s of an older build: %w", plr.Namespace, plr.Name, err)
		}
		activity.GetLogger(ctx).Info("stopped the Renovate run of an older build of the same edge", "run", plr.Name,
			"supersededBy", req.Name, "nudging", req.Nudging, "nudged", req.Nudged)
	}
	return nil
}
