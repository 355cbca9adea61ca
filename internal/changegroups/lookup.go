// Package changegroups answers the question every entry point asks: is this
// nudge (source -> target) held by an active ChangeGroup in the namespace?
package changegroups

import (
	"context"
	"slices"
	"sort"
	"time"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

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
	if IsActive(cg) {
		return true
	}
	// Both times have one-second resolution: within the same second the build counts
	// as after the group's end, so it is nudged rather than lost.
	end := cg.Status.CompletionTime
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
	return oldestOf(groups, func(cg *appstudiov1alpha1.ChangeGroup) bool { return Holds(cg, source, target) && HeldAt(cg, at) }), nil
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

func oldest(found []*appstudiov1alpha1.ChangeGroup) *appstudiov1alpha1.ChangeGroup {
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].CreationTimestamp, found[j].CreationTimestamp
		if a.Equal(&b) {
			return found[i].Name < found[j].Name
		}
		return a.Before(&b)
	})
	return found[0]
}
