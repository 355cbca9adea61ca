// Package grouplookup answers the question every entry point asks: is this
// nudge (source -> target) held by an active ChangeGroup in the namespace?
package grouplookup

import (
	"context"
	"slices"
	"sort"
	"time"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

// LabelAutomatic marks a ChangeGroup nudgeflow opened from a NudgeConfig batching
// policy ("true"); LabelBatchTarget names its batched target.
const (
	LabelAutomatic   = "nudgeflow.konflux-ci.dev/automatic"
	LabelBatchTarget = "nudgeflow.konflux-ci.dev/batch-target"
)

// IsAutomatic reports whether nudgeflow opened the group for a batching policy.
func IsAutomatic(cg *appstudiov1alpha1.ChangeGroup) bool {
	return cg.Labels[LabelAutomatic] == "true"
}

// Collecting reports whether a group takes new builds: active, and for an
// automatic group not yet released. An automatic group stops collecting when it
// releases CI (its PR then only waits for merge): later builds of its members open
// the next batch instead of re-running CI on a released PR.
func Collecting(cg *appstudiov1alpha1.ChangeGroup) bool {
	if !IsActive(cg) {
		return false
	}
	return !IsAutomatic(cg) || cg.Status.Phase != appstudiov1alpha1.PhaseReady
}

// IsActive reports whether a ChangeGroup still collects builds: not being deleted
// and not in a final phase.
func IsActive(cg *appstudiov1alpha1.ChangeGroup) bool {
	return cg.DeletionTimestamp.IsZero() && !cg.Status.Phase.IsFinal()
}

// Holds reports whether the group collects builds of source for target.
func Holds(cg *appstudiov1alpha1.ChangeGroup, source, target string) bool {
	if cg.Spec.NudgedComponent != target {
		return false
	}
	return slices.ContainsFunc(cg.Spec.NudgingComponents, func(r appstudiov1alpha1.NudgingComponentRef) bool {
		return r.Name == source
	})
}

// HeldAt reports whether the group held its nudges at time at: created before it,
// and not yet ended then.
func HeldAt(cg *appstudiov1alpha1.ChangeGroup, at time.Time) bool {
	if cg.CreationTimestamp.After(at) {
		return false
	}
	if Collecting(cg) {
		return true
	}
	// Both times have one-second resolution: within the same second the build counts
	// as after the group's end, so it is nudged rather than lost. An automatic group
	// ends collecting at its release.
	end := cg.Status.CompletionTime
	if IsAutomatic(cg) && cg.Status.ReadyTime != nil {
		end = cg.Status.ReadyTime
	}
	return end != nil && end.Time.After(at)
}

// FindHoldingAt returns the ChangeGroup that held source -> target when a build
// finished at time at — active or since ended — or nil. A resync that re-delivers an
// old build must not nudge what a group collected and has since completed.
func FindHoldingAt(ctx context.Context, c ctrlclient.Reader, namespace, source, target string, at time.Time) (*appstudiov1alpha1.ChangeGroup, error) {
	groups, err := groupsOf(ctx, c, namespace, target)
	if err != nil {
		return nil, err
	}
	return oldestOf(groups, func(cg *appstudiov1alpha1.ChangeGroup) bool { return Holds(cg, source, target) && HeldAt(cg, at) }).DeepCopy(), nil
}

func oldestOf(groups []appstudiov1alpha1.ChangeGroup, match func(*appstudiov1alpha1.ChangeGroup) bool) *appstudiov1alpha1.ChangeGroup {
	var found []*appstudiov1alpha1.ChangeGroup
	for i := range groups {
		if match(&groups[i]) {
			found = append(found, &groups[i])
		}
	}
	return oldest(found)
}

// Preferred is the group of several that every caller agrees on (see oldest).
func Preferred(groups []appstudiov1alpha1.ChangeGroup) *appstudiov1alpha1.ChangeGroup {
	return oldestOf(groups, func(*appstudiov1alpha1.ChangeGroup) bool { return true })
}

// oldest picks the group every caller agrees on: a manual group before an automatic
// one (manual groups take precedence over batching), then the oldest, then by name.
func oldest(found []*appstudiov1alpha1.ChangeGroup) *appstudiov1alpha1.ChangeGroup {
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool {
		if ai, aj := IsAutomatic(found[i]), IsAutomatic(found[j]); ai != aj {
			return aj
		}
		a, b := found[i].CreationTimestamp, found[j].CreationTimestamp
		if a.Equal(&b) {
			return found[i].Name < found[j].Name
		}
		return a.Before(&b)
	})
	return found[0]
}
