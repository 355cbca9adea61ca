package builds

import (
	"context"
	"errors"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// Which Snapshots gate a validated edge:
//
//   - with a gatingGroup, the Snapshots of that ComponentGroup;
//   - without one (integration-service's NudgeConfig allows that; nudgeflow's own
//     admits it only for edges already stored), every Snapshot that holds the
//     build, its application's or any ComponentGroup's.
//
// The build is nudged once any of them passes, and counts as failed only when all
// of them finished and none passed. The two halves of "all" live in two places:
//
//   - the Snapshots that exist now are the bridge's to know (its cache): for an
//     ungated edge it forwards a failure only when every Snapshot holding the build
//     finished and none passed (allFailed); a failure while another one still tests
//     waits for that one, whose own verdict is forwarded when it ends;
//   - the Snapshots integration-service has not created yet (a gating group's next
//     Snapshot holds the build through the group's Global Candidate List, an
//     ungated build's other groups' come as their builds land) are the workflow's:
//     it waits a grace after the build's first failed verdict
//     (validatednudge.DefaultFailedSnapshotGrace, --failed-snapshot-grace) before
//     the build counts as failed, and a pass after that still delivers it while no
//     newer build came.
//
// A pass is always forwarded at once.

// SnapshotReconciler signals the ValidatedNudge workflows a finished Snapshot gates.
type SnapshotReconciler struct {
	Client  ctrlclient.Reader
	Options Options
}

// Reconcile handles one Snapshot.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s mirrorv1alpha1.Snapshot
	if err := r.Client.Get(ctx, req.NamespacedName, &s); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	passed, finished := snapshotTestVerdict(&s)
	if !finished {
		return ctrl.Result{}, nil
	}
	nc, err := getNudgeConfig(ctx, r.Client, s.Namespace)
	if err != nil || nc == nil {
		return ctrl.Result{}, err
	}
	source := sourceOf(nc)
	var siblings []mirrorv1alpha1.Snapshot // read once, for the first ungated edge that needs them
	var errs []error
	for _, n := range nc.Spec.Nudges {
		if n.EffectiveMode() != konfluxv1alpha1.ModeValidated {
			continue
		}
		gated := n.GatingGroup != ""
		if gated && n.GatingGroup != s.Spec.ComponentGroup {
			continue
		}
		images := imagesOf(&s, n.From)
		if len(images) == 0 {
			continue
		}
		if !gated && !passed {
			if siblings == nil {
				var list mirrorv1alpha1.SnapshotList
				if err := r.Client.List(ctx, &list, ctrlclient.InNamespace(s.Namespace)); err != nil {
					return ctrl.Result{}, err
				}
				siblings = list.Items
			}
			if !allFailed(siblings, n.From, images) {
				ctrl.LoggerFrom(ctx).V(1).Info("ungated validated edge: another Snapshot of the build passed or still tests; this failure decides nothing",
					"edge", n.From+"->"+n.To, "snapshot", s.Name)
				continue
			}
		}
		e := Edge{From: n.From, To: n.To, Mode: konfluxv1alpha1.ModeValidated, GatingGroup: n.GatingGroup, Source: source}
		res := validatednudge.SnapshotResult{Snapshot: s.Name, ComponentGroup: s.Spec.ComponentGroup, Images: images, Passed: passed}
		if err := SignalValidated(ctx, r.Options, s.Namespace, e, validatednudge.SignalSnapshotTested, res); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// imagesOf are the containerImages of component's entries in s.
func imagesOf(s *mirrorv1alpha1.Snapshot, component string) []string {
	var images []string
	for _, c := range s.Spec.Components {
		if c.Name == component && c.ContainerImage != "" {
			images = append(images, c.ContainerImage)
		}
	}
	return images
}

// allFailed: every Snapshot holding one of images for component finished testing
// and none passed.
func allFailed(snapshots []mirrorv1alpha1.Snapshot, component string, images []string) bool {
	for i := range snapshots {
		held := slices.ContainsFunc(imagesOf(&snapshots[i], component), func(img string) bool { return slices.Contains(images, img) })
		if !held {
			continue
		}
		if passed, finished := snapshotTestVerdict(&snapshots[i]); passed || !finished {
			return false
		}
	}
	return true
}
