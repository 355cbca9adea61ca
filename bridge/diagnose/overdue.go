package diagnose

import (
	"context"
	"sort"
	"time"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

// OverdueGroup is a ChangeGroup still collecting past its timeout.
type OverdueGroup struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Phase is the status's phase ("" when the workflow has written none yet).
	Phase   string        `json:"phase"`
	Nudged  string        `json:"nudgedComponent"`
	Created time.Time     `json:"created"`
	Timeout time.Duration `json:"timeout"`
	// Overdue is how long ago creation plus timeout passed.
	Overdue time.Duration `json:"overdue"`
	// Ready is the status's "ready/total".
	Ready string `json:"ready,omitempty"`
	// Waiting are the members with no new build yet: what the group waits for.
	Waiting    []string `json:"waiting,omitempty"`
	WorkflowID string   `json:"workflowID,omitempty"`
	// Deleting: the CR is being deleted and its finalizer is still on.
	Deleting bool `json:"deleting,omitempty"`
}

// OverdueReport is OverdueGroups's answer.
type OverdueReport struct {
	// Scanned counts the ChangeGroups read; Open those not in a final phase.
	Scanned int `json:"scanned"`
	Open    int `json:"open"`
	// Overdue are the groups past their timeout, most overdue first.
	Overdue []OverdueGroup `json:"overdue"`
}

// OverdueGroups lists the ChangeGroups in namespace ("" for all) that still
// collect builds past their spec.timeout at now: not final, not Ready (a Ready
// group follows its pull request, timeout or not), as the bridge's
// nudgeflow_changegroup_oldest_overdue_seconds measures them. ChangeGroups are
// read in full (their status says phase and times), a page of chunk at a time.
func OverdueGroups(ctx context.Context, r Reader, namespace string, chunk int64, now time.Time) (OverdueReport, error) {
	var rep OverdueReport
	err := eachGroup(ctx, r, namespace, chunk, func(cg *appstudiov1alpha1.ChangeGroup) {
		rep.Scanned++
		if g, open, overdue := overdueOf(cg, now); open {
			rep.Open++
			if overdue {
				rep.Overdue = append(rep.Overdue, g)
			}
		}
	})
	if err != nil {
		return rep, err
	}
	sort.SliceStable(rep.Overdue, func(i, j int) bool {
		a, b := rep.Overdue[i], rep.Overdue[j]
		if a.Overdue != b.Overdue {
			return a.Overdue > b.Overdue
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return rep, nil
}

// overdueOf reports whether cg is open (not final) and past its timeout at now.
func overdueOf(cg *appstudiov1alpha1.ChangeGroup, now time.Time) (OverdueGroup, bool, bool) {
	if cg.Status.Phase.IsFinal() {
		return OverdueGroup{}, false, false
	}
	t := cg.Spec.Timeout
	if t == nil || t.Duration <= 0 || cg.Status.Phase == appstudiov1alpha1.PhaseReady {
		return OverdueGroup{}, true, false
	}
	late := now.Sub(cg.CreationTimestamp.Add(t.Duration))
	if late <= 0 {
		return OverdueGroup{}, true, false
	}
	g := OverdueGroup{
		Namespace: cg.Namespace, Name: cg.Name, Phase: string(cg.Status.Phase), Nudged: cg.Spec.NudgedComponent,
		Created: cg.CreationTimestamp.Time, Timeout: t.Duration, Overdue: late, Ready: cg.Status.Ready,
		Waiting: waitingMembers(cg), WorkflowID: cg.Status.WorkflowID, Deleting: !cg.DeletionTimestamp.IsZero(),
	}
	return g, true, true
}

// waitingMembers are the group's members that have no new build yet.
func waitingMembers(cg *appstudiov1alpha1.ChangeGroup) []string {
	var out []string
	if len(cg.Status.Components) == 0 {
		// No status yet: every member is awaited.
		for _, m := range cg.Spec.NudgingComponents {
			out = append(out, m.Name)
		}
		return out
	}
	for _, c := range cg.Status.Components {
		if c.State == appstudiov1alpha1.ComponentWaiting {
			out = append(out, c.Name)
		}
	}
	return out
}
