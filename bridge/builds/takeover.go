package builds

import (
	"context"
	"errors"
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Taking over from integration-service the nudges it cannot deliver.
//
// integration-service (IS) runs the immediate edges of its own NudgeConfig, but it
// nudges only targets it has credentials for: its GitHub App path is a stub that
// returns no target (IS:tekton/nudging/nudge_credentials.go:78-120 at 2ae2878,
// TODO STONEINTG-1671), so a target repository with only Pipelines as Code's
// GitHub App (Konflux's usual setup) is left out of its run, or the build is marked
// no-credentials. build-service has stood down for that NudgeConfig, so nobody
// would nudge it. IS decides late: only after Tekton Chains signed the build (it
// waits up to 5 minutes, IS:helpers/build.go:17) and after it created the build's
// Snapshot (EnsureSnapshotExists runs before EnsureNudgePipelineRunsExist). Every
// verdict it writes is final: its idempotency guard skips a build carrying
// konflux.AnnotationISNudgeProcessed whatever the value, credentials-error
// included (IS:internal/controller/buildpipeline/buildpipeline_adapter.go:166).
//
// So the bridge waits for IS's verdict on a build with edges IS runs, holding the
// build (the pruner waits too), and then nudges exactly the targets of those edges
// the verdict does not name. When IS has not decided by ISDecisionDeadline after
// the build finished (no Chains, IS down, a build IS does not watch), the bridge
// claims the build by writing IS's own annotation with ISNudgeTakenOver (in one
// write guarded by the build's resourceVersion, so a verdict IS wrote first wins),
// which IS's guard then honours: it never nudges the build afterwards, and the
// bridge nudges every such target.

// DefaultISDecisionDeadline is how long after a build finished the bridge waits for
// integration-service's verdict: twice IS's own Chains timeout (5 minutes), so a
// build signed late is still IS's.
const DefaultISDecisionDeadline = 10 * time.Minute

// ISNudgeTakenOver is the value of konflux.AnnotationISNudgeProcessed the bridge
// writes when integration-service did not decide in time: IS reads any value as
// processed and nudges nothing more, and the bridge nudges every target IS would
// have.
const ISNudgeTakenOver = "taken-over-by-nudgeflow"

// errAwaitingIS marks an edge integration-service runs whose verdict on the build
// is not in yet: the build stays held until it is, or until the deadline.
var errAwaitingIS = errors.New("awaiting integration-service's verdict")

// isVerdict is integration-service's acknowledgement on a build.
type isVerdict struct {
	// decided: IS (or the bridge, taking over) wrote its annotation.
	decided bool
	// value is the annotation as written: targets, or a reason.
	value string
	// nudged are the targets IS's nudge run carries.
	nudged map[string]bool
}

func verdictOf(plr *tektonv1.PipelineRun) isVerdict {
	v, ok := plr.Annotations[konflux.AnnotationISNudgeProcessed]
	return isVerdict{decided: ok, value: v, nudged: isNudged(plr)}
}

// why says why IS left target out, for the Event and the log.
func (v isVerdict) why(deadline time.Duration) string {
	switch v.value {
	case ISNudgeTakenOver:
		return fmt.Sprintf("integration-service did not decide within %s of the build's end", deadline)
	case konflux.ISNudgeNoCredentials:
		return "integration-service has no credentials for it (" + konflux.ISNudgeNoCredentials + "; its GitHub App path creates none)"
	case konflux.ISNudgeCredentialsError:
		return "integration-service found no image registry credential for the build (" + konflux.ISNudgeCredentialsError + ")"
	}
	if len(v.nudged) > 0 {
		return "integration-service left it out of its nudge run (no basic-auth credentials for its repository; its GitHub App path creates none)"
	}
	return "integration-service nudged nothing from the build (" + v.value + ")"
}

func (o Options) isDecisionDeadline() time.Duration {
	if o.ISDecisionDeadline > 0 {
		return o.ISDecisionDeadline
	}
	return DefaultISDecisionDeadline
}

// awaitIS is called when some edge of a finished build waits for integration-
// service. Before the deadline the build stays held and is looked at again then
// (IS's annotation is an update of the build, which wakes the reconciler sooner).
// After it, the bridge claims the build and routes it again at once.
func (r *BuildReconciler) awaitIS(ctx context.Context, plr *tektonv1.PipelineRun, finishedAt time.Time) (time.Duration, error) {
	deadline := r.Options.isDecisionDeadline()
	if wait := time.Until(finishedAt.Add(deadline)); wait > 0 {
		log.FromContext(ctx).V(1).Info("waiting for integration-service's verdict before nudging the targets it leaves out", "for", wait.Round(time.Second))
		if !Holds(plr) {
			// The build must outlive the wait: the pruner could delete it meanwhile.
			if err := r.hold(ctx, plr); err != nil {
				return 0, err
			}
		}
		return wait, nil
	}
	err := r.patchBuild(ctx, plr, func(p *tektonv1.PipelineRun) bool {
		if _, decided := p.Annotations[konflux.AnnotationISNudgeProcessed]; decided {
			return false
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[konflux.AnnotationISNudgeProcessed] = ISNudgeTakenOver
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("taking the build over from integration-service: %w", err)
	}
	log.FromContext(ctx).Info("integration-service did not decide on the build in time; nudgeflow takes its edges over",
		"deadline", deadline, "annotation", konflux.AnnotationISNudgeProcessed)
	return time.Nanosecond, nil
}

// tellTakenOver records, on the build, that nudgeflow nudges a target
// integration-service left out, and why.
func (r *BuildReconciler) tellTakenOver(plr *tektonv1.PipelineRun, e Edge, v isVerdict) {
	if r.Options.Recorder == nil {
		return
	}
	r.Options.Recorder.Eventf(plr, corev1.EventTypeNormal, ReasonNudgedBy, "%s -> %s nudged by nudgeflow: %s",
		e.From, e.To, v.why(r.Options.isDecisionDeadline()))
}

// ReasonNudgedBy is the reason of the Events that say who nudges what.
const ReasonNudgedBy = "NudgedBy"
