package diagnose

import (
	"context"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// UnheldNudge is another service's nudge PipelineRun that nudgeflow's
// interception did not hold.
type UnheldNudge struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
	From      string    `json:"from"`
	Build     string    `json:"build,omitempty"`
	Targets   []string  `json:"targets"`
	// OutsideGroups are target=ChangeGroup pairs: an open group collects the edge
	// now, so this run nudged the target outside the group's pull request.
	OutsideGroups []string `json:"outsideGroups,omitempty"`
}

// UnheldNudgesReport is UnheldNudges's answer.
type UnheldNudgesReport struct {
	// Scanned counts the nudge PipelineRuns read (as metadata).
	Scanned int           `json:"scanned"`
	Unheld  []UnheldNudge `json:"unheld"`
}

// UnheldNudges lists the nudge PipelineRuns of build-service or
// integration-service created at or after since in namespace ("" for all) that
// nudgeflow's interception neither held nor cancelled (it fails open), and names,
// per target, the open ChangeGroup that collects the edge now: those targets got
// a pull request outside their group's. Nudge runs are read as metadata only;
// ChangeGroups in full (their phase), paged.
func UnheldNudges(ctx context.Context, r Reader, namespace string, since time.Time, chunk int64) (UnheldNudgesReport, error) {
	var rep UnheldNudgesReport
	err := eachRunMeta(ctx, r, namespace, chunk, nudgeRunSelectors(), func(m *metav1.PartialObjectMetadata) {
		rep.Scanned++
		if m.Labels[renovaterun.LabelManagedBy] == renovaterun.ManagedByNudgeflow || konflux.HeldAtAdmission(m.Annotations) ||
			m.CreationTimestamp.Time.Before(since) {
			return
		}
		n := UnheldNudge{Namespace: m.Namespace, Name: m.Name, Created: m.CreationTimestamp.Time,
			From: konflux.NudgingKey.Get(m.Annotations), Build: konflux.NudgingPipelineKey.Get(m.Annotations)}
		for _, t := range strings.Split(konflux.NudgedKey.Get(m.Annotations), ",") {
			if t = strings.TrimSpace(t); t != "" {
				n.Targets = append(n.Targets, t)
			}
		}
		rep.Unheld = append(rep.Unheld, n)
	})
	if err != nil || len(rep.Unheld) == 0 {
		return rep, err
	}
	groups, err := openGroups(ctx, r, namespace, chunk)
	if err != nil {
		return rep, err
	}
	for i := range rep.Unheld {
		n := &rep.Unheld[i]
		for _, t := range n.Targets {
			var holding []appstudiov1alpha1.ChangeGroup
			for _, cg := range groups[n.Namespace] {
				if grouplookup.Holds(&cg, n.From, t) {
					holding = append(holding, cg)
				}
			}
			if cg := grouplookup.Preferred(holding); cg != nil {
				n.OutsideGroups = append(n.OutsideGroups, t+"="+cg.Name)
			}
		}
	}
	sort.SliceStable(rep.Unheld, func(i, j int) bool { return rep.Unheld[i].Created.Before(rep.Unheld[j].Created) })
	return rep, nil
}

// openGroups are the ChangeGroups that collect builds now, by namespace.
func openGroups(ctx context.Context, r Reader, namespace string, chunk int64) (map[string][]appstudiov1alpha1.ChangeGroup, error) {
	out := map[string][]appstudiov1alpha1.ChangeGroup{}
	err := eachGroup(ctx, r, namespace, chunk, func(cg *appstudiov1alpha1.ChangeGroup) {
		if grouplookup.Collecting(cg) {
			out[cg.Namespace] = append(out[cg.Namespace], *cg)
		}
	})
	return out, err
}
