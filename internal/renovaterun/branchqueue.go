package renovaterun

import (
	"context"
	"fmt"
	"sort"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// One Renovate run per branch at a time. build-service runs every target of a
// build in ONE PipelineRun, one Renovate after the other; nudgeflow runs one
// PipelineRun per (build, target), so two targets in one repository whose nudging
// component asks for build-nudge-simple-branch (one branch for all of them), or two
// builds of one edge, would push the same branch at once. So every run carries its
// branch (AnnotationBranch), and a run starts only when no other of nudgeflow's runs
// on that branch has started and not ended, and none waiting is older; the others
// stay pending, marked AnnotationQueuedForBranch, and the bridge releases the oldest
// when the branch's run ends (ReleaseNextOnBranch).
const (
	// AnnotationBranch is "<host>/<repository>@<base branch>:<branch>" of a run.
	AnnotationBranch = "nudgeflow.konflux-ci.dev/branch"
	// BranchPrefix of every nudge branch.
	BranchPrefix = "konflux/component-updates/"
	// AnnotationQueuedForBranch marks a run waiting for its branch.
	AnnotationQueuedForBranch = "nudgeflow.konflux-ci.dev/queued-for-branch"
)

// BranchKey is the branch a run pushes: Renovate names a group's branch
// branchPrefix + additionalBranchPrefix + the group's slug ("component-update-<nudging>").
func BranchKey(host, repository, baseBranch, nudging, nudged string, simpleBranch bool) string {
	return fmt.Sprintf("%s/%s@%s:%s", host, repository, baseBranch, BranchName(nudging, nudged, simpleBranch))
}

// BranchName is the branch Renovate pushes for nudging -> nudged.
func BranchName(nudging, nudged string, simpleBranch bool) string {
	additional := nudged + "-"
	if simpleBranch {
		additional = ""
	}
	return BranchPrefix + additional + "component-update-" + nudging
}

// branchState is what a run is to its branch.
type branchState int

const (
	branchDone    branchState = iota // ended: holds nothing
	branchRunning                    // started (released, or cancelled and not ended yet)
	branchWaiting                    // pending: queued, or being launched
)

func stateOnBranch(plr *tektonv1.PipelineRun) branchState {
	switch {
	case plr.IsDone():
		return branchDone
	case plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending:
		return branchWaiting
	}
	return branchRunning
}

// before orders waiting runs: the older first, then by name.
func before(a, b *tektonv1.PipelineRun) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// onBranch picks of runs nudgeflow's runs on branch.
func onBranch(runs []tektonv1.PipelineRun, branch string) []tektonv1.PipelineRun {
	var out []tektonv1.PipelineRun
	for _, plr := range runs {
		if plr.Labels[LabelManagedBy] == ManagedByNudgeflow && plr.Annotations[AnnotationBranch] == branch {
			out = append(out, plr)
		}
	}
	return out
}

// mayStart reports whether run may start among the runs on its branch, and else
// which run it waits for.
func mayStart(run *tektonv1.PipelineRun, onBranch []tektonv1.PipelineRun) (bool, string) {
	for i := range onBranch {
		other := &onBranch[i]
		if other.Name == run.Name {
			continue
		}
		switch stateOnBranch(other) {
		case branchRunning:
			return false, other.Name
		case branchWaiting:
			if before(other, run) {
				return false, other.Name
			}
		}
	}
	return true, ""
}

// Releasable: the run's pending is nudgeflow's own to lift (see LaunchRenovate):
// not a hold of the interceptor, not Kueue's queue.
func Releasable(plr *tektonv1.PipelineRun) bool {
	return plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending && !konflux.HeldAtAdmission(plr.Annotations) && plr.Labels[LabelKueueQueue] == ""
}

// release lifts a run's pending, guarded by the version read: a run someone
// changed meanwhile is decided again on the next event.
//
// The patch goes through a copy: plr stays as the API server last showed it,
// pending, should the release fail (the launch then withdraws it).
//
// A conflict (someone wrote the run meanwhile: the bridge, a status writer) is not
// a failure: the run is read again and released if it is still nudgeflow's to
// release; a run that meanwhile started, ended or was held is left as it is.
func release(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun) error {
	return patchPending(ctx, c, plr, "starting", Releasable, func(released *tektonv1.PipelineRun) {
		released.Spec.Status = ""
		delete(released.Annotations, AnnotationQueuedForBranch)
	})
}

// patchPending writes change to a pending run (release, or stopSuperseded),
// guarded by the version read, as release says; after a conflict, only while the
// run is still mine (Releasable, or what stopSuperseded may stop).
func patchPending(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, what string, mine func(*tektonv1.PipelineRun) bool, change func(*tektonv1.PipelineRun)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed := plr.DeepCopy()
		change(changed)
		err := c.Patch(ctx, changed, ctrlclient.MergeFromWithOptions(plr, ctrlclient.MergeFromWithOptimisticLock{}))
		if err == nil {
			*plr = *changed
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("%s PipelineRun %s/%s: %w", what, plr.Namespace, plr.Name, err)
		}
		var now tektonv1.PipelineRun
		if err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &now); err != nil {
			return fmt.Errorf("reading PipelineRun %s/%s again: %w", plr.Namespace, plr.Name, err)
		}
		*plr = now
		if !mine(plr) || plr.IsDone() {
			return nil
		}
		return err // the conflict: try again on the run as it is now
	})
}

// queue marks a pending run as waiting for blocker.
func queue(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, blocker string) error {
	if plr.Annotations[AnnotationQueuedForBranch] == blocker {
		return nil
	}
	patch := ctrlclient.MergeFrom(plr.DeepCopy())
	plr.Annotations[AnnotationQueuedForBranch] = blocker
	if err := c.Patch(ctx, plr, patch); err != nil {
		return fmt.Errorf("queueing PipelineRun %s/%s behind %s: %w", plr.Namespace, plr.Name, blocker, err)
	}
	return nil
}

// StartOrQueue starts a pending run its branch allows among the namespace's nudge
// runs (all, listed after the run was created), else queues it; a run a newer
// build's run supersedes is stopped instead (supersede_release.go), and then
// carries AnnotationSupersededBy.
func StartOrQueue(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, all []tektonv1.PipelineRun) (started bool, blocker string, err error) {
	if newer, err := newerRunOf(ctx, c, plr, all); err != nil || newer != "" {
		if err != nil {
			return false, "", err
		}
		return false, "", stopSuperseded(ctx, c, plr, newer)
	}
	if branch := plr.Annotations[AnnotationBranch]; branch != "" {
		if ok, by := mayStart(plr, onBranch(all, branch)); !ok {
			return false, by, queue(ctx, c, plr, by)
		}
	}
	return true, "", release(ctx, c, plr)
}

// ReleaseNextOnBranch starts the oldest run waiting on branch once none runs there
// (the bridge calls it when one of nudgeflow's runs on the branch ended). Every
// queued run a newer build's run supersedes is stopped first, never started
// (stopSupersededOnBranch), wherever it stands in the queue; then the oldest
// waiting run that is left starts.
func ReleaseNextOnBranch(ctx context.Context, c ctrlclient.Client, ns, branch string) (string, error) {
	all, err := NudgeRuns(ctx, c, ns)
	if err != nil {
		return "", err
	}
	waiting, busy := waitingOn(all, branch)
	if busy {
		return "", nil
	}
	stopped, err := stopSupersededOnBranch(ctx, c, waiting, all)
	if err != nil {
		return "", err
	}
	for _, plr := range waiting {
		if stopped[plr.Name] {
			continue // it never ran: it holds the branch for nothing
		}
		if plr.Annotations[AnnotationQueuedForBranch] == "" {
			// Its launch has not decided yet, and will see the branch free.
			return "", nil
		}
		if !Releasable(plr) {
			continue // held or queued by Kueue: not nudgeflow's to start
		}
		if err := release(ctx, c, plr); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return "", nil // changed meanwhile: its own event decides again
			}
			return "", err
		}
		if plr.Spec.Status != "" {
			continue // changed meanwhile and left as it is
		}
		return plr.Name, nil
	}
	return "", nil
}

// waitingOn is nudgeflow's runs waiting on branch among all, oldest first (they
// point into all), and whether one runs there.
func waitingOn(all []tektonv1.PipelineRun, branch string) (waiting []*tektonv1.PipelineRun, busy bool) {
	for i := range all {
		plr := &all[i]
		if plr.Labels[LabelManagedBy] != ManagedByNudgeflow || plr.Annotations[AnnotationBranch] != branch {
			continue
		}
		switch stateOnBranch(plr) {
		case branchRunning:
			busy = true
		case branchWaiting:
			waiting = append(waiting, plr)
		}
	}
	sort.Slice(waiting, func(i, j int) bool { return before(waiting[i], waiting[j]) })
	return waiting, false
}

// stopSupersededOnBranch stops every queued run among waiting that a run of a
// newer build of its edge supersedes (newerRunOf on all, listed for this
// decision), and names those it stopped. Every one, not only those ahead of the
// next to start: the queue is ordered by creation to the second, then by name, so
// a newer build's run created in the same second as an older queued one may stand
// ahead of it, still undecided by its launch (which, having listed the edge's
// runs before the older one existed, will not stop it either). Looking only up to
// that run left the older one queued, and released later, over the newer digest.
// A run changed meanwhile (conflict, gone) is left to its own event.
//
// A stopped run counts as running on its branch until Tekton ended it
// (stateOnBranch), and its end releases the next (ReleaseNextOnBranch).
func stopSupersededOnBranch(ctx context.Context, c ctrlclient.Client, waiting []*tektonv1.PipelineRun, all []tektonv1.PipelineRun) (map[string]bool, error) {
	stopped := map[string]bool{}
	for _, plr := range waiting {
		if !Queued(plr) || !Releasable(plr) {
			continue // undecided, held, or Kueue's: its launch, the group or the launch's look decides
		}
		by, err := newerRunOf(ctx, c, plr, all)
		if err != nil {
			return nil, err
		}
		if by == "" {
			continue
		}
		// Stopped, or changed meanwhile and left as it is: not to be started now.
		stopped[plr.Name] = true
		if err := stopSuperseded(ctx, c, plr, by); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return stopped, nil
}

// Queued reports whether a run waits for its branch.
func Queued(plr *tektonv1.PipelineRun) bool {
	return plr.Annotations[AnnotationQueuedForBranch] != "" && plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending
}

// StartIfFree starts a queued run whose branch is free now (the bridge calls it on
// every event of a queued run: the branch's run may have ended between the launch's
// look and its queue mark). It reports whether it started the run.
func StartIfFree(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun) (bool, error) {
	if !Queued(plr) || !Releasable(plr) {
		return false, nil
	}
	all, err := NudgeRuns(ctx, c, plr.Namespace)
	if err != nil {
		return false, err
	}
	// The queued runs of the branch a newer build supersedes are stopped first,
	// this one's too: one queued behind a run that waits for a superseded run
	// would otherwise wait for a run that is never released.
	waiting, _ := waitingOn(all, plr.Annotations[AnnotationBranch])
	stopped, err := stopSupersededOnBranch(ctx, c, waiting, all)
	if err != nil {
		return false, err
	}
	if stopped[plr.Name] {
		return false, nil
	}
	if ok, _ := mayStart(plr, onBranch(all, plr.Annotations[AnnotationBranch])); !ok {
		return false, nil
	}
	if err := release(ctx, c, plr); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return plr.Spec.Status == "", nil
}
